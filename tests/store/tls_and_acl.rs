//! Connecting to a production-like Redis: TLS with a certificate signed by a private CA
//! (made by the test), an ACL user in the URL, and the clear errors of a certificate
//! that does not verify and of a wrong password.

use std::sync::Arc;

use rollboard::{BoardConfig, Error, Event, RedisOptions, RedisStore, Rollboard, Span};

use crate::support::{TestRedis, clock, ranking, unique, with_clock};

/// Creates a board, writes three events and returns the board's ranking: the store
/// really works over this connection.
async fn write_and_read(store: RedisStore) -> Vec<(String, i64)> {
    let boards: Rollboard = with_clock(Arc::new(store), &clock());
    let board = unique("tls");
    boards
        .create(&board, BoardConfig::parse("1h", &["1h", "24h"]).unwrap())
        .await
        .unwrap();
    let events = [Event::new("a", 3), Event::new("b", 5), Event::new("a", 4)];
    let outcome = boards.windowed(&board).incr_batch(&events).await.unwrap();
    assert_eq!(outcome.accepted, 3);
    ranking(
        &boards
            .windowed(&board)
            .top(Some(Span::parse("24h").unwrap()), 0, 10)
            .await
            .unwrap(),
    )
}

fn expected() -> Vec<(String, i64)> {
    vec![("a".into(), 7), ("b".into(), 5)]
}

/// Adds the ACL user `app` with password `pw` and every permission.
async fn add_app_user(raw: &mut redis::aio::MultiplexedConnection) {
    let _: () = redis::cmd("ACL")
        .arg(&["SETUSER", "app", "on", ">pw", "~*", "&*", "+@all"])
        .query_async(raw)
        .await
        .unwrap();
}

fn with_ca(ca: &std::path::Path) -> RedisOptions {
    RedisOptions {
        tls_ca: Some(ca.to_owned()),
        ..RedisOptions::default()
    }
}

#[cfg(feature = "tls")]
#[tokio::test]
async fn rediss_with_the_private_ca_writes_and_reads_exactly() {
    let redis = TestRedis::spawn_tls().await;
    let (url, ca) = redis.tls.clone().unwrap();
    let store = RedisStore::connect_with(&url, with_ca(&ca)).await.unwrap();
    assert_eq!(write_and_read(store).await, expected());
}

#[cfg(feature = "tls")]
#[tokio::test]
async fn rediss_without_the_ca_is_a_start_up_error_naming_the_certificate() {
    let redis = TestRedis::spawn_tls().await;
    let (url, _) = redis.tls.clone().unwrap();
    let error = RedisStore::connect_with(&url, RedisOptions::default())
        .await
        .unwrap_err();
    assert_eq!(
        error,
        Error::StoreUnavailable(format!(
            "the TLS certificate of Redis at {url} does not verify (UnknownIssuer): if a \
             private CA signed it, set REDIS_TLS_CA (redis_tls_ca) to that CA's PEM file"
        ))
    );
}

#[cfg(feature = "tls")]
#[tokio::test]
async fn a_ca_that_did_not_sign_the_certificate_is_named_in_the_error() {
    let redis = TestRedis::spawn_tls().await;
    let other = TestRedis::spawn_tls().await;
    let (url, _) = redis.tls.clone().unwrap();
    let (_, other_ca) = other.tls.clone().unwrap();
    let error = RedisStore::connect_with(&url, with_ca(&other_ca))
        .await
        .unwrap_err();
    assert_eq!(
        error,
        Error::StoreUnavailable(format!(
            // Both test CAs have the same name, so the chain is built and its signature
            // fails.
            "the TLS certificate of Redis at {url} does not verify (BadSignature): the CA in \
             {} (REDIS_TLS_CA) did not sign it",
            other_ca.display()
        ))
    );
}

#[cfg(feature = "tls")]
#[tokio::test]
async fn an_acl_user_in_the_url_connects_with_and_without_tls() {
    let redis = TestRedis::spawn_tls().await;
    let (tls_url, ca) = redis.tls.clone().unwrap();
    let mut raw = redis.raw().await;
    add_app_user(&mut raw).await;
    // From now on only `app` can connect: the URLs' credentials must be what is used.
    let _: () = redis::cmd("ACL")
        .arg(&["SETUSER", "default", "off"])
        .query_async(&mut raw)
        .await
        .unwrap();
    let anonymous = RedisStore::connect_with(&redis.url, RedisOptions::default()).await;
    let Err(Error::StoreUnavailable(message)) = anonymous else {
        panic!("connecting without credentials must fail");
    };
    assert!(
        message.starts_with(&format!(
            "Redis at {} needs a user and password: put them in the URL",
            redis.url
        )),
        "{message}"
    );

    let plain = redis.url.replace("redis://", "redis://app:pw@");
    let store = RedisStore::connect_with(&plain, RedisOptions::default())
        .await
        .unwrap();
    assert_eq!(write_and_read(store).await, expected());

    let tls = tls_url.replace("rediss://", "rediss://app:pw@");
    let store = RedisStore::connect_with(&tls, with_ca(&ca)).await.unwrap();
    assert_eq!(write_and_read(store).await, expected());
}

#[tokio::test]
async fn a_wrong_password_is_a_clear_error_without_the_password() {
    let redis = TestRedis::spawn().await;
    add_app_user(&mut redis.raw().await).await;
    let url = redis.url.replace("redis://", "redis://app:wrong@");
    let error = RedisStore::connect_with(&url, RedisOptions::default())
        .await
        .unwrap_err();
    let shown = redis.url.replace("redis://", "redis://***@");
    assert_eq!(
        error,
        Error::StoreUnavailable(format!(
            "Redis at {shown} refused the user and password of the URL: Password \
             authentication failed - AuthenticationFailed"
        ))
    );
}

#[tokio::test]
async fn a_tls_ca_with_a_plain_url_is_refused() {
    let options = with_ca(std::path::Path::new("/etc/ca.pem"));
    let error = RedisStore::connect_with("redis://127.0.0.1:1/", options)
        .await
        .unwrap_err();
    assert_eq!(
        error,
        Error::StoreUnavailable(
            "a TLS CA is set (/etc/ca.pem), but the Redis URL is not rediss://: use rediss:// \
             to connect with TLS, or unset REDIS_TLS_CA (redis_tls_ca)"
                .into()
        )
    );
}

#[tokio::test]
async fn a_url_that_skips_certificate_checks_is_refused() {
    let error = RedisStore::connect_with("rediss://127.0.0.1:1/#insecure", RedisOptions::default())
        .await
        .unwrap_err();
    assert_eq!(error.code(), "store_unavailable");
    assert!(
        error.to_string().contains("rollboard always verifies it"),
        "{error}"
    );
}

/// A Redis Cluster on TLS only (clients and bus), its certificate signed by a private
/// CA: boards on every master are written and read exactly, and without the CA the
/// connection is refused with the same clear error as a single node's.
#[cfg(feature = "tls")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tls_cluster_with_the_private_ca_writes_and_reads_on_every_master() {
    use crate::test_cluster::TestCluster;
    let cluster = TestCluster::start_tls(3);
    let (urls, ca) = cluster.tls.clone().unwrap();
    let store = RedisStore::connect_cluster_with(&urls, with_ca(&ca))
        .await
        .unwrap();
    let boards: Rollboard = with_clock(Arc::new(store), &clock());
    // Boards until every master holds one.
    let mut masters = std::collections::BTreeMap::new();
    while masters.len() < 3 {
        let board = unique("tlsc");
        let owner = cluster.owner(cluster.keyslot(&format!("board_{{{board}}}")));
        masters.entry(owner).or_insert(board);
    }
    for board in masters.values() {
        boards
            .create(board, BoardConfig::parse("1h", &["1h", "24h"]).unwrap())
            .await
            .unwrap();
        let events = [Event::new("a", 3), Event::new("b", 5), Event::new("a", 4)];
        assert_eq!(
            boards
                .windowed(board)
                .incr_batch(&events)
                .await
                .unwrap()
                .accepted,
            3
        );
        let top = boards
            .windowed(board)
            .top(Some(Span::parse("24h").unwrap()), 0, 10)
            .await
            .unwrap();
        assert_eq!(ranking(&top), expected(), "{board}");
    }
    let error = RedisStore::connect_cluster_with(&urls, RedisOptions::default())
        .await
        .unwrap_err();
    assert!(
        matches!(&error, Error::StoreUnavailable(m) if m.contains("does not verify (UnknownIssuer)")),
        "{error:?}"
    );
}
