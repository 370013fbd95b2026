//! Slow and idle clients, with raw sockets and tokio's paused clock (time advances only
//! when every task waits, so the timeouts fire at exact instants and nothing sleeps):
//! half a request head is closed after the header-read timeout (the next one's counted
//! from the last response), a byte every few seconds does not keep a connection alive, a
//! slow body is not cut by it, an idle keep-alive connection is closed, the connection
//! cap holds, `Expect: 100-continue` with a body over the limit gets 413 at once, and a
//! chunked body is cut at the limit.

use std::time::Duration;

use rollboard::Rollboard;
use rollboard::http::{HttpOptions, router};
use rollboard::service::{ConnectionLimits, serve_connections};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::time::Instant;

const HEAD: &[u8] = b"GET /healthz HTTP/1.1\r\nHost: t\r\n\r\n";

/// The service (on the memory store: these tests are about sockets) with `limits`;
/// returns its address.
async fn serve(limits: ConnectionLimits) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap().to_string();
    let options = HttpOptions {
        max_body_bytes: 1024,
        ..HttpOptions::default()
    };
    let app = router(Rollboard::memory(), options);
    tokio::spawn(serve_connections(
        listener,
        app,
        limits,
        std::future::pending(),
    ));
    address
}

fn limits(header_read: u64, keep_alive: u64, max_connections: usize) -> ConnectionLimits {
    ConnectionLimits {
        header_read_timeout: Duration::from_secs(header_read),
        keep_alive_timeout: Duration::from_secs(keep_alive),
        max_connections,
    }
}

/// Reads one response (head and a `Content-Length` body) and returns it as text.
async fn read_response(stream: &mut TcpStream) -> String {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        let text = String::from_utf8_lossy(&buf).to_string();
        if let Some(end) = text.find("\r\n\r\n") {
            let length = text[..end]
                .lines()
                .find_map(|l| {
                    l.to_ascii_lowercase()
                        .strip_prefix("content-length: ")
                        .map(|v| v.trim().parse::<usize>().unwrap())
                })
                .unwrap_or(0);
            if buf.len() >= end + 4 + length {
                return text;
            }
        }
        let n = stream.read(&mut chunk).await.unwrap();
        assert!(
            n > 0,
            "the connection closed after {:?}",
            String::from_utf8_lossy(&buf)
        );
        buf.extend_from_slice(&chunk[..n]);
    }
}

/// Reads until the server closes the connection; returns what came.
async fn read_to_close(stream: &mut TcpStream) -> String {
    let mut buf = Vec::new();
    let _ = stream.read_to_end(&mut buf).await;
    String::from_utf8_lossy(&buf).to_string()
}

/// A connection to `address` whose first request (`HEAD`) was answered 200.
async fn answered_once(address: &str) -> TcpStream {
    let mut stream = TcpStream::connect(address).await.unwrap();
    stream.write_all(HEAD).await.unwrap();
    let response = read_response(&mut stream).await;
    assert!(response.starts_with("HTTP/1.1 200 OK\r\n"), "{response}");
    stream
}

#[tokio::test(start_paused = true)]
async fn half_a_request_head_is_closed_after_the_header_read_timeout() {
    let address = serve(limits(10, 60, 16)).await;
    let mut stream = TcpStream::connect(&address).await.unwrap();
    let start = Instant::now();
    stream
        .write_all(b"GET /healthz HTTP/1.1\r\nHost: t\r\n")
        .await
        .unwrap();
    let answer = read_to_close(&mut stream).await;
    assert_eq!(answer, "", "no response to half a head");
    assert_eq!(start.elapsed().as_secs(), 10);
}

#[tokio::test(start_paused = true)]
async fn a_byte_every_few_seconds_does_not_keep_a_connection_alive() {
    let address = serve(limits(10, 60, 16)).await;
    let stream = TcpStream::connect(&address).await.unwrap();
    let start = Instant::now();
    let (mut reader, mut writer) = stream.into_split();
    let trickle = tokio::spawn(async move {
        let mut sent = 0;
        for byte in b"GET /healthz HTTP/1.1\r\nHost: t\r\nX-Slow: aaaaaaaaaaaaaaaaaaaa" {
            if writer.write_all(&[*byte]).await.is_err() {
                break;
            }
            sent += 1;
            tokio::time::sleep(Duration::from_secs(3)).await;
        }
        sent
    });
    let mut buf = Vec::new();
    let _ = reader.read_to_end(&mut buf).await;
    assert_eq!(buf, b"");
    assert_eq!(start.elapsed().as_secs(), 10);
    // Bytes went at 0, 3, 6 and 9 s; the one at 12 s found the connection closed (or
    // was the last accepted by the socket before the reset).
    let sent = trickle.await.unwrap();
    assert!((4..=5).contains(&sent), "{sent} bytes sent");
}

#[tokio::test(start_paused = true)]
async fn an_idle_keep_alive_connection_is_closed() {
    let address = serve(limits(10, 2, 16)).await;
    let mut stream = answered_once(&address).await;
    // Kept alive: a second request on the same connection is served.
    tokio::time::sleep(Duration::from_secs(1)).await;
    stream.write_all(HEAD).await.unwrap();
    assert!(
        read_response(&mut stream)
            .await
            .starts_with("HTTP/1.1 200 OK\r\n")
    );
    let idle = Instant::now();
    assert_eq!(read_to_close(&mut stream).await, "");
    assert_eq!(idle.elapsed().as_secs(), 2);

    // A connection that never sends anything is idle too.
    let mut silent = TcpStream::connect(&address).await.unwrap();
    let start = Instant::now();
    assert_eq!(read_to_close(&mut silent).await, "");
    assert_eq!(start.elapsed().as_secs(), 2);
}

#[tokio::test(start_paused = true)]
async fn the_connection_cap_holds() {
    let address = serve(limits(10, 5, 1)).await;
    let mut first = answered_once(&address).await;
    // The second connection waits in the backlog until the first closes (idle, at 5 s).
    let start = Instant::now();
    let mut second = TcpStream::connect(&address).await.unwrap();
    second.write_all(HEAD).await.unwrap();
    let response = read_response(&mut second).await;
    assert!(response.starts_with("HTTP/1.1 200 OK\r\n"), "{response}");
    assert_eq!(start.elapsed().as_secs(), 5);
    assert_eq!(read_to_close(&mut first).await, "");
}

#[tokio::test(start_paused = true)]
async fn expect_100_continue_over_the_body_limit_gets_413_at_once() {
    let address = serve(limits(10, 5, 16)).await;
    let mut stream = TcpStream::connect(&address).await.unwrap();
    stream
        .write_all(
            b"POST /v1/boards/b/events HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\n\
              Content-Length: 5000\r\nExpect: 100-continue\r\n\r\n",
        )
        .await
        .unwrap();
    let response = read_response(&mut stream).await;
    assert!(
        response.starts_with("HTTP/1.1 413 Payload Too Large\r\n"),
        "{response}"
    );
    assert!(response.ends_with(
        r#"{"error":{"code":"body_too_large","message":"the request body (5000 bytes) is larger than the limit of 1024 bytes"}}"#
    ), "{response}");

    // Within the limit, the client is told to go on, and the body is read.
    let mut stream = TcpStream::connect(&address).await.unwrap();
    let body = br#"{"member":"m"}"#;
    stream
        .write_all(
            format!(
                "POST /v1/boards/b/events HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\n\
                 Content-Length: {}\r\nExpect: 100-continue\r\n\r\n",
                body.len()
            )
            .as_bytes(),
        )
        .await
        .unwrap();
    let mut go_on = [0u8; 25];
    stream.read_exact(&mut go_on).await.unwrap();
    assert_eq!(&go_on, b"HTTP/1.1 100 Continue\r\n\r\n");
    stream.write_all(body).await.unwrap();
    let response = read_response(&mut stream).await;
    assert!(
        response.starts_with("HTTP/1.1 404 Not Found\r\n"),
        "{response}"
    );
    assert!(response.contains("board_not_found"), "{response}");
}

#[tokio::test(start_paused = true)]
async fn a_body_slower_than_the_header_read_timeout_is_read_whole() {
    // The head came whole: the request is the service's, however long its body takes
    // (here 14 s, a byte a second, beyond the 10 s for a head).
    let address = serve(limits(10, 5, 16)).await;
    let mut stream = TcpStream::connect(&address).await.unwrap();
    let body = br#"{"member":"m"}"#;
    stream
        .write_all(
            format!(
                "POST /v1/boards/b/events HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\n\
                 Content-Length: {}\r\n\r\n",
                body.len()
            )
            .as_bytes(),
        )
        .await
        .unwrap();
    let start = Instant::now();
    for byte in body {
        tokio::time::sleep(Duration::from_secs(1)).await;
        stream.write_all(&[*byte]).await.unwrap();
    }
    let response = read_response(&mut stream).await;
    assert!(response.contains("board_not_found"), "{response}");
    assert_eq!(start.elapsed().as_secs(), 14);
}

#[tokio::test(start_paused = true)]
async fn the_next_head_is_timed_from_the_last_response() {
    let address = serve(limits(10, 60, 16)).await;
    let mut stream = answered_once(&address).await;
    let answered = Instant::now();
    // Half of the next head 4 s later: 6 s are left for the rest of it.
    tokio::time::sleep(Duration::from_secs(4)).await;
    stream.write_all(&HEAD[..20]).await.unwrap();
    assert_eq!(read_to_close(&mut stream).await, "");
    assert_eq!(answered.elapsed().as_secs(), 10);
}

#[tokio::test]
async fn a_chunked_body_is_cut_at_the_limit_as_it_is_read() {
    let address = serve(limits(10, 5, 16)).await;
    // `{"member":"m"}` padded with spaces to `size` bytes, in one chunk.
    let send = |size: usize| {
        let address = address.clone();
        async move {
            let body = format!("{:<size$}", r#"{"member":"m"}"#);
            let mut stream = TcpStream::connect(&address).await.unwrap();
            let request = format!(
                "POST /v1/boards/b/events HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\n\
                 Transfer-Encoding: chunked\r\n\r\n{size:x}\r\n{body}\r\n0\r\n\r\n"
            );
            stream.write_all(request.as_bytes()).await.unwrap();
            read_response(&mut stream).await
        }
    };
    let over = send(2000).await;
    assert!(
        over.starts_with("HTTP/1.1 413 Payload Too Large\r\n"),
        "{over}"
    );
    assert!(over.ends_with(
        r#"{"error":{"code":"body_too_large","message":"the request body is larger than the limit"}}"#
    ), "{over}");
    // Within the limit it is read whole (and the board is not there).
    let within = send(1000).await;
    assert!(within.starts_with("HTTP/1.1 404 Not Found\r\n"), "{within}");
    assert!(within.contains("board_not_found"), "{within}");
}
