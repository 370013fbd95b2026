//! The source article's design, for comparison: per event an unpipelined `GET
//! last_slot_<name>`, `HINCRBY slot_<name>_<ts> member 1`, `ZINCRBY stats_<name> 1
//! member`, on one synchronous connection (as the article's code runs).

use std::time::{Duration, Instant};

use crate::load::{Load, Spread, member_ids};

pub fn article_design(redis_url: &str, duration: Duration) -> Load {
    let client = redis::Client::open(redis_url).unwrap();
    let mut conn = client.get_connection().unwrap();
    let _: () = redis::cmd("SET")
        .arg("last_slot_bench")
        .arg(1_700_000_000)
        .query(&mut conn)
        .unwrap();
    let members = member_ids(Spread::Uniform, 100_000, 7);
    let start = Instant::now();
    let mut load = Load::default();
    while start.elapsed() < duration {
        let member = format!("post:{}", members[load.done as usize % members.len()]);
        let slot: i64 = redis::cmd("GET")
            .arg("last_slot_bench")
            .query(&mut conn)
            .unwrap();
        let _: i64 = redis::cmd("HINCRBY")
            .arg(format!("slot_bench_{slot}"))
            .arg(&member)
            .arg(1)
            .query(&mut conn)
            .unwrap();
        let _: f64 = redis::cmd("ZINCRBY")
            .arg("stats_bench")
            .arg(1)
            .arg(&member)
            .query(&mut conn)
            .unwrap();
        load.done += 1;
    }
    load.elapsed = start.elapsed();
    load
}
