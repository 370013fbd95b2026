//! A minimal keep-alive HTTP/1.1 client for load generation, in the spirit of `wrk`:
//! one request at a time per connection, pre-formatted request bytes, responses read by
//! `Content-Length`. The generator shares the machine with the service and Redis, so it
//! has to cost little.

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

pub struct Connection {
    stream: TcpStream,
    buffer: Vec<u8>,
}

/// A formatted request.
pub fn request(method: &str, host: &str, path: &str, body: &[u8]) -> Vec<u8> {
    let mut out = format!(
        "{method} {path} HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
        body.len()
    )
    .into_bytes();
    out.extend_from_slice(body);
    out
}

impl Connection {
    pub async fn open(host: &str) -> Connection {
        let stream = TcpStream::connect(host)
            .await
            .expect("connect to the service");
        stream.set_nodelay(true).unwrap();
        Connection {
            stream,
            buffer: Vec::with_capacity(16 * 1024),
        }
    }

    /// Sends `request` and returns the status and the body of the response.
    pub async fn send(&mut self, request: &[u8]) -> (u16, Vec<u8>) {
        self.stream.write_all(request).await.expect("send request");
        self.buffer.clear();
        let mut chunk = [0u8; 16 * 1024];
        loop {
            if let Some(end) = find(&self.buffer, b"\r\n\r\n") {
                let head = std::str::from_utf8(&self.buffer[..end]).expect("ASCII headers");
                let status: u16 = head[9..12].parse().expect("status code");
                let length: usize = head
                    .lines()
                    .find_map(|l| {
                        let (name, value) = l.split_once(':')?;
                        name.eq_ignore_ascii_case("content-length")
                            .then(|| value.trim().parse().ok())?
                    })
                    .unwrap_or(0);
                let total = end + 4 + length;
                while self.buffer.len() < total {
                    let n = self.stream.read(&mut chunk).await.expect("read body");
                    assert!(n > 0, "connection closed mid-response");
                    self.buffer.extend_from_slice(&chunk[..n]);
                }
                return (status, self.buffer[end + 4..total].to_vec());
            }
            let n = self.stream.read(&mut chunk).await.expect("read response");
            assert!(n > 0, "connection closed before a response");
            self.buffer.extend_from_slice(&chunk[..n]);
        }
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}
