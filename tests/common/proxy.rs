//! A fault-injecting TCP proxy between a store under test and the test Redis.
//!
//! Every request is forwarded as it comes; replies come back in order. A test arms a
//! fault with a predicate on the request (its command and arguments, as parsed from
//! RESP): the next matching request is forwarded to Redis (which runs it), and then
//! - [`Fault::Cut`]: the client connection is closed before that reply reaches it, or
//! - [`Fault::Hold`]: that reply (and so every later reply of the connection, which is
//!   ordered) is held back for a while, past the client's response timeout.
//!
//! [`Fault::Delay`] instead holds the matching request itself before Redis sees it, so a
//! test can act (through another connection) between two calls of a job.
//!
//! A reply `-NOSCRIPT` (the client loads the script and sends it again) does not use up
//! a fault: a fault always hits a request that Redis ran. Shared by the test binaries,
//! each of which uses part of it.

#![allow(dead_code)]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;

/// What happens to the reply of a request a fault hits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// Close the client's connection instead of passing the reply on.
    Cut,
    /// Pass the reply on only after this long.
    Hold(Duration),
    /// Forward the request only after this long (it hits the request, not the reply).
    Delay(Duration),
}

/// One request, as the client sent it: the command and its arguments.
#[derive(Debug, Clone)]
pub struct Request {
    pub args: Vec<Vec<u8>>,
}

impl Request {
    /// The command's name, upper case.
    pub fn command(&self) -> String {
        self.args
            .first()
            .map(|a| String::from_utf8_lossy(a).to_ascii_uppercase())
            .unwrap_or_default()
    }

    /// Whether some argument is exactly `arg`.
    pub fn has_arg(&self, arg: &str) -> bool {
        self.args.iter().any(|a| a.as_slice() == arg.as_bytes())
    }

    /// Whether some argument starts with `prefix`.
    pub fn has_arg_starting(&self, prefix: &str) -> bool {
        self.args.iter().any(|a| a.starts_with(prefix.as_bytes()))
    }

    /// Whether it runs a script (EVALSHA or EVAL) whose keys include `key`.
    pub fn is_script_with_key(&self, key: &str) -> bool {
        matches!(self.command().as_str(), "EVALSHA" | "EVAL") && self.has_arg(key)
    }
}

type Predicate = Box<dyn Fn(&Request) -> bool + Send + Sync>;

struct Armed {
    fault: Fault,
    remaining: usize,
    matches: Predicate,
}

#[derive(Default)]
struct Shared {
    armed: Mutex<Vec<Armed>>,
    fired: AtomicUsize,
    requests: AtomicUsize,
}

/// A proxy listening on a free local port; stops when dropped.
pub struct FaultProxy {
    port: u16,
    shared: Arc<Shared>,
    task: tokio::task::JoinHandle<()>,
}

impl FaultProxy {
    /// Starts a proxy to the Redis at `target` (`redis://host:port/...`).
    pub async fn start(target: &str) -> FaultProxy {
        let upstream = target
            .trim_start_matches("redis://")
            .split('/')
            .next()
            .unwrap()
            .to_owned();
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let shared = Arc::new(Shared::default());
        let task = tokio::spawn({
            let shared = shared.clone();
            async move {
                while let Ok((client, _)) = listener.accept().await {
                    let Ok(server) = TcpStream::connect(&upstream).await else {
                        continue;
                    };
                    tokio::spawn(serve(client, server, shared.clone()));
                }
            }
        });
        FaultProxy { port, shared, task }
    }

    /// The URL to connect through the proxy.
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/", self.port)
    }

    /// Arms `fault` for the next `times` requests that `matches` accepts.
    pub fn arm(
        &self,
        fault: Fault,
        times: usize,
        matches: impl Fn(&Request) -> bool + Send + Sync + 'static,
    ) {
        self.shared.armed.lock().unwrap().push(Armed {
            fault,
            remaining: times,
            matches: Box::new(matches),
        });
    }

    /// Removes every armed fault.
    pub fn disarm(&self) {
        self.shared.armed.lock().unwrap().clear();
    }

    /// How many faults have hit a request so far.
    pub fn fired(&self) -> usize {
        self.shared.fired.load(Ordering::SeqCst)
    }

    /// Waits until `n` faults have hit a request.
    pub async fn wait_fired(&self, n: usize) {
        while self.fired() < n {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }

    /// How many requests have passed so far.
    pub fn requests(&self) -> usize {
        self.shared.requests.load(Ordering::SeqCst)
    }
}

impl Drop for FaultProxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Relays one client connection. Requests go up as they come, each announced to the
/// reply side with the fault it may get; replies come down one by one.
async fn serve(client: TcpStream, server: TcpStream, shared: Arc<Shared>) {
    let _ = client.set_nodelay(true);
    let _ = server.set_nodelay(true);
    let (client_read, client_write) = client.into_split();
    let (server_read, server_write) = server.into_split();
    let (announce, announced) = mpsc::unbounded_channel();
    let up = tokio::spawn(requests_up(
        client_read,
        server_write,
        announce,
        shared.clone(),
    ));
    replies_down(server_read, client_write, announced, shared).await;
    // Cut, or either side closed: drop both connections.
    up.abort();
}

/// Which armed fault (by position) a request matches, if any.
type Tag = Option<usize>;

async fn requests_up(
    mut client: OwnedReadHalf,
    mut server: OwnedWriteHalf,
    announce: mpsc::UnboundedSender<Tag>,
    shared: Arc<Shared>,
) {
    let mut buffer = Vec::new();
    let mut chunk = vec![0u8; 64 * 1024];
    loop {
        let Ok(n) = client.read(&mut chunk).await else {
            return;
        };
        if n == 0 {
            return;
        }
        buffer.extend_from_slice(&chunk[..n]);
        let mut sent = 0;
        while let Some(len) = frame_len(&buffer[sent..]) {
            let request = Request {
                args: parse_args(&buffer[sent..sent + len]),
            };
            shared.requests.fetch_add(1, Ordering::SeqCst);
            let (tag, delay) = {
                let mut armed = shared.armed.lock().unwrap();
                let tag = armed
                    .iter()
                    .position(|a| a.remaining > 0 && (a.matches)(&request));
                match tag.map(|at| &mut armed[at]) {
                    Some(a) if matches!(a.fault, Fault::Delay(_)) => {
                        a.remaining -= 1;
                        shared.fired.fetch_add(1, Ordering::SeqCst);
                        let Fault::Delay(pause) = a.fault else {
                            unreachable!()
                        };
                        (None, Some(pause))
                    }
                    _ => (tag, None),
                }
            };
            if let Some(pause) = delay {
                // Forward what came before it, then wait.
                if server.write_all(&buffer[..sent]).await.is_err() {
                    return;
                }
                buffer.drain(..sent);
                sent = 0;
                tokio::time::sleep(pause).await;
            }
            if announce.send(tag).is_err() {
                return;
            }
            sent += len;
        }
        if sent > 0 {
            if server.write_all(&buffer[..sent]).await.is_err() {
                return;
            }
            buffer.drain(..sent);
        }
    }
}

async fn replies_down(
    mut server: OwnedReadHalf,
    mut client: OwnedWriteHalf,
    mut announced: mpsc::UnboundedReceiver<Tag>,
    shared: Arc<Shared>,
) {
    let mut buffer = Vec::new();
    let mut chunk = vec![0u8; 64 * 1024];
    loop {
        let Ok(n) = server.read(&mut chunk).await else {
            return;
        };
        if n == 0 {
            return;
        }
        buffer.extend_from_slice(&chunk[..n]);
        let mut done = 0;
        while let Some(len) = frame_len(&buffer[done..]) {
            let reply = &buffer[done..done + len];
            let Some(tag) = announced.recv().await else {
                return;
            };
            let fault = tag.and_then(|at| {
                if reply.starts_with(b"-NOSCRIPT") {
                    return None;
                }
                let mut armed = shared.armed.lock().unwrap();
                let armed = armed.get_mut(at).filter(|a| a.remaining > 0)?;
                armed.remaining -= 1;
                shared.fired.fetch_add(1, Ordering::SeqCst);
                Some(armed.fault)
            });
            match fault {
                Some(Fault::Cut) => {
                    let _ = client.shutdown().await;
                    return;
                }
                Some(Fault::Hold(pause)) => tokio::time::sleep(pause).await,
                Some(Fault::Delay(_)) | None => {}
            }
            if client.write_all(reply).await.is_err() {
                return;
            }
            done += len;
        }
        buffer.drain(..done);
    }
}

/// The length of the first complete RESP value in `buf`, or `None` if it is incomplete.
fn frame_len(buf: &[u8]) -> Option<usize> {
    let line_end = buf.windows(2).position(|w| w == b"\r\n")?;
    let header = &buf[1..line_end];
    let after = line_end + 2;
    let number = || -> i64 { std::str::from_utf8(header).unwrap().parse().unwrap() };
    match buf[0] {
        b'+' | b'-' | b':' | b'_' | b',' | b'#' | b'(' => Some(after),
        b'$' | b'!' | b'=' => {
            let len = number();
            if len < 0 {
                return Some(after);
            }
            let end = after + len as usize + 2;
            (buf.len() >= end).then_some(end)
        }
        b'*' | b'~' | b'>' | b'%' | b'|' => {
            let count = number();
            if count < 0 {
                return Some(after);
            }
            let elements = if matches!(buf[0], b'%' | b'|') {
                count * 2
            } else {
                count
            };
            let mut at = after;
            for _ in 0..elements {
                at += frame_len(&buf[at..])?;
            }
            Some(at)
        }
        other => panic!("the proxy cannot frame RESP type {:?}", other as char),
    }
}

/// The bulk strings of a request (an array of bulk strings).
fn parse_args(frame: &[u8]) -> Vec<Vec<u8>> {
    let mut args = Vec::new();
    if frame.first() != Some(&b'*') {
        return args;
    }
    let mut at = frame.windows(2).position(|w| w == b"\r\n").unwrap() + 2;
    while at < frame.len() {
        let rest = &frame[at..];
        let line_end = rest.windows(2).position(|w| w == b"\r\n").unwrap();
        let len: usize = std::str::from_utf8(&rest[1..line_end])
            .unwrap()
            .parse()
            .unwrap_or(0);
        let start = at + line_end + 2;
        args.push(frame[start..start + len].to_vec());
        at = start + len + 2;
    }
    args
}
