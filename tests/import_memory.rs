//! An import runs in constant memory: streaming 600,000 events (about 25 MB of JSON
//! lines, generated on the fly) must not grow this process's peak memory by anything
//! like the input's size. This test has its own binary, so the peak is the import's.

#[path = "common/redis.rs"]
mod test_redis;

use std::io::Read;
use std::sync::Arc;

use rollboard::jobs::import::{ImportOptions, import};
use rollboard::{BoardConfig, ManualClock, Rollboard, Settings, Timestamp};

/// Generates `total` JSON lines lazily, without ever holding them all.
struct Lines {
    next: u64,
    total: u64,
    pending: Vec<u8>,
}

impl Read for Lines {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        while self.pending.len() < buf.len() && self.next < self.total {
            let line = format!(
                "{{\"member\":\"post:{:06}\",\"delta\":1,\"at\":1699999200}}\n",
                self.next % 50_000
            );
            self.pending.extend_from_slice(line.as_bytes());
            self.next += 1;
        }
        let n = buf.len().min(self.pending.len());
        buf[..n].copy_from_slice(&self.pending[..n]);
        self.pending.drain(..n);
        Ok(n)
    }
}

/// The peak resident set of this process, in kB (`VmHWM`).
fn peak_kb() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .unwrap()
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches(" kB").trim().parse().ok())
        .unwrap()
}

#[tokio::test]
async fn an_import_streams_in_constant_memory() {
    let redis = test_redis::TestRedis::start().await;
    let clock = ManualClock::new(Timestamp::from_unix_seconds(1_699_999_200).unwrap());
    let boards = Rollboard::with(redis.store().await, Arc::new(clock), Settings::default());
    let board = format!("mem{}", std::process::id());
    boards
        .create(&board, BoardConfig::parse("1h", &["1h"]).unwrap())
        .await
        .unwrap();

    // Warm up allocator and connections with a small import first.
    let small = Lines {
        next: 0,
        total: 20_000,
        pending: Vec::new(),
    };
    import(&boards, &board, small, ImportOptions::default(), |_| {})
        .await
        .unwrap();
    let before = peak_kb();
    let total = 600_000;
    let lines = Lines {
        next: 0,
        total,
        pending: Vec::new(),
    };
    let report = import(&boards, &board, lines, ImportOptions::default(), |_| {})
        .await
        .unwrap();
    let grown = peak_kb().saturating_sub(before);
    assert_eq!(report.imported, total);
    // The input alone is ~25 MB and parsed events ~60 MB: holding them would show.
    assert!(
        grown < 20_000,
        "peak memory grew by {grown} kB while streaming {total} events"
    );
    let page = boards.windowed(&board).top(None, 0, 1).await.unwrap();
    assert_eq!(page.entries[0].score, (620_000 / 50_000) as i64 + 1);
}
