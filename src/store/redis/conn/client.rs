//! The Redis client a connection is made from: the URL (`redis://` or `rediss://`, with
//! an ACL user and password in it), TLS trust (the system's roots, or a private CA from
//! [`RedisOptions::tls_ca`]), and the errors of connecting said plainly: a certificate
//! that does not verify, credentials Redis refuses, a URL that cannot be used.
//!
//! The server's certificate is always verified; there is no setting to turn that off.

use redis::{Client, ErrorKind, RedisError};

use super::options::RedisOptions;
use crate::error::{Error, Result};

/// The client for `url` with the TLS trust of `options`.
pub(crate) fn client(url: &str, options: &RedisOptions) -> Result<Client> {
    let (info, tls) = checked(url, options)?;
    if tls {
        tls_client(info, options.tls_ca.as_deref(), url, options)
    } else {
        Client::open(info).map_err(|e| connect_error(e, url, options))
    }
}

/// The connection info of `url`, and whether it asks for TLS, after the checks every
/// URL gets: TLS only with the `tls` feature, never `#insecure`, a CA only with TLS.
fn checked(url: &str, options: &RedisOptions) -> Result<(redis::ConnectionInfo, bool)> {
    if url.starts_with("rediss://") && cfg!(not(feature = "tls")) {
        return Err(Error::StoreUnavailable(
            "rediss:// needs TLS, and this build of rollboard has no `tls` feature: build it \
             with the default features (or `features = [\"tls\"]`)"
                .into(),
        ));
    }
    let info = redis::IntoConnectionInfo::into_connection_info(url)
        .map_err(|_| Error::StoreUnavailable(invalid_url(url)))?;
    let tls = match info.addr() {
        redis::ConnectionAddr::TcpTls { insecure: true, .. } => {
            return Err(Error::StoreUnavailable(
                "the Redis URL asks not to verify the server's certificate (#insecure): \
                 rollboard always verifies it; trust a private CA with REDIS_TLS_CA instead"
                    .into(),
            ));
        }
        redis::ConnectionAddr::TcpTls { .. } => true,
        _ => false,
    };
    if let (Some(ca), false) = (&options.tls_ca, tls) {
        return Err(Error::StoreUnavailable(format!(
            "a TLS CA is set ({}), but the Redis URL is not rediss://: use rediss:// to \
             connect with TLS, or unset REDIS_TLS_CA (redis_tls_ca)",
            ca.display()
        )));
    }
    Ok((info, tls))
}

/// Whether `url` is a Redis URL (`redis://`, `rediss://`, `redis+unix://`,
/// `unix://`); if not, why, with the forms that are.
#[cfg_attr(not(feature = "server"), allow(dead_code))]
pub(crate) fn check_url(url: &str) -> std::result::Result<(), String> {
    redis::IntoConnectionInfo::into_connection_info(url)
        .map(|_| ())
        .map_err(|_| invalid_url(url))
}

/// Why `url` is not a Redis URL, and the forms that are.
fn invalid_url(url: &str) -> String {
    format!(
        "invalid Redis URL {:?}: expected redis://[user:password@]host[:port][/db] or \
         rediss://… (TLS)",
        redact(url)
    )
}

/// The client of a Redis Cluster reached through the seed nodes `urls`, with the
/// timeouts and TLS trust of `options` (the same settings as a single node), and the
/// client's own redirect and `TRYAGAIN` retries bounded to `retries` (0: every reply,
/// redirects included, comes back to the connection (`mod.rs`), which decides).
pub(crate) fn cluster_client(
    urls: &[String],
    options: &RedisOptions,
    retries: u32,
) -> Result<redis::cluster::ClusterClient> {
    if urls.is_empty() {
        return Err(Error::StoreUnavailable(
            "no Redis Cluster seed nodes: give at least one URL (REDIS_CLUSTER_URLS, \
             --redis-cluster, redis_cluster)"
                .into(),
        ));
    }
    let mut infos = Vec::with_capacity(urls.len());
    let mut tls = false;
    for url in urls {
        let (info, node_tls) = checked(url, options)?;
        tls |= node_tls;
        infos.push(info);
    }
    let builder = redis::cluster::ClusterClientBuilder::new(infos)
        .connection_timeout(options.connection_timeout)
        .response_timeout(options.response_timeout)
        .retries(retries)
        .min_retry_wait(5)
        .max_retry_wait(200)
        .retry_wait_formula(5, 2);
    let builder = match (&options.tls_ca, tls) {
        (Some(ca), true) => cluster_ca(builder, ca)?,
        _ => builder,
    };
    builder.build().map_err(|e| {
        Error::StoreUnavailable(format!(
            "the Redis Cluster seed nodes cannot be used together ({}): {e}",
            urls.iter()
                .map(|u| redact(u))
                .collect::<Vec<_>>()
                .join(", ")
        ))
    })
}

#[cfg(feature = "tls")]
fn cluster_ca(
    builder: redis::cluster::ClusterClientBuilder,
    ca: &std::path::Path,
) -> Result<redis::cluster::ClusterClientBuilder> {
    let _ = rustls::crypto::ring::default_provider().install_default();
    Ok(builder.certs(redis::TlsCertificates {
        client_tls: None,
        root_cert: Some(read_ca(ca)?),
    }))
}

#[cfg(not(feature = "tls"))]
fn cluster_ca(
    _builder: redis::cluster::ClusterClientBuilder,
    _ca: &std::path::Path,
) -> Result<redis::cluster::ClusterClientBuilder> {
    unreachable!("a rediss:// URL is refused above without the `tls` feature")
}

/// The PEM bytes of the private CA.
#[cfg(feature = "tls")]
fn read_ca(ca: &std::path::Path) -> Result<Vec<u8>> {
    std::fs::read(ca).map_err(|e| {
        Error::StoreUnavailable(format!(
            "cannot read the Redis TLS CA {} (REDIS_TLS_CA, redis_tls_ca): {e}",
            ca.display()
        ))
    })
}

#[cfg(feature = "tls")]
fn tls_client(
    info: redis::ConnectionInfo,
    ca: Option<&std::path::Path>,
    url: &str,
    options: &RedisOptions,
) -> Result<Client> {
    // rustls needs one process-wide crypto provider; install ring's unless the
    // embedding program installed one already (then this does nothing).
    let _ = rustls::crypto::ring::default_provider().install_default();
    let Some(ca) = ca else {
        // The system's roots (rustls-native-certs): a public or system-installed CA.
        return Client::open(info).map_err(|e| connect_error(e, url, options));
    };
    let pem = read_ca(ca)?;
    let certificates = redis::TlsCertificates {
        client_tls: None,
        root_cert: Some(pem),
    };
    Client::build_with_tls(info, certificates).map_err(|e| {
        Error::StoreUnavailable(format!(
            "the Redis TLS CA {} is not a usable PEM certificate: {e}",
            ca.display()
        ))
    })
}

#[cfg(not(feature = "tls"))]
fn tls_client(
    _info: redis::ConnectionInfo,
    _ca: Option<&std::path::Path>,
    _url: &str,
    _options: &RedisOptions,
) -> Result<Client> {
    unreachable!("a rediss:// URL is refused above without the `tls` feature")
}

/// On a `rediss://` URL, one connection attempt bounded by the connection timeout
/// before the reconnecting connection (which tries several times): a port that takes
/// the TCP connection but never answers the TLS handshake (a plain Redis does that) is
/// said to be so within the timeout.
pub(crate) async fn tls_first_attempt(
    client: &Client,
    url: &str,
    options: &RedisOptions,
) -> Result<()> {
    let redis::ConnectionAddr::TcpTls { host, port, .. } = client.get_connection_info().addr()
    else {
        return Ok(());
    };
    let config = redis::AsyncConnectionConfig::new()
        .set_connection_timeout(Some(options.connection_timeout))
        .set_response_timeout(Some(options.response_timeout));
    let err = match client
        .get_multiplexed_async_connection_with_config(&config)
        .await
    {
        Ok(_) => return Ok(()),
        Err(err) => err,
    };
    let tcp = tokio::time::timeout(
        options.connection_timeout,
        tokio::net::TcpStream::connect((host.as_str(), *port)),
    )
    .await;
    if err.is_timeout() && matches!(tcp, Ok(Ok(_))) {
        return Err(Error::StoreUnavailable(format!(
            "the TLS handshake with Redis at {} did not finish within {:?}: the port takes \
             connections but does not answer TLS; if it serves plain Redis, use redis:// \
             instead of rediss://",
            redact(url),
            options.connection_timeout
        )));
    }
    Err(connect_error(err, url, options))
}

/// An error of the first connection, as the operator needs to read it: a certificate
/// that does not verify and credentials Redis refuses are named as such.
pub(crate) fn connect_error(err: RedisError, url: &str, options: &RedisOptions) -> Error {
    let target = redact(url);
    if let Some(certificate) = certificate_error(&err) {
        let trust = trust_advice(&certificate, options.tls_ca.as_deref());
        return Error::StoreUnavailable(format!(
            "the TLS certificate of Redis at {target} does not verify ({certificate}): {trust}"
        ));
    }
    if err.kind() == ErrorKind::Parse {
        return Error::StoreUnavailable(format!(
            "{target} is not a Redis server (it answered something else): check the host and \
             port"
        ));
    }
    if err.kind() == ErrorKind::AuthenticationFailed || err.code() == Some("WRONGPASS") {
        return Error::StoreUnavailable(format!(
            "Redis at {target} refused the user and password of the URL: {err}"
        ));
    }
    if err.code() == Some("NOAUTH") {
        return Error::StoreUnavailable(format!(
            "Redis at {target} needs a user and password: put them in the URL \
             (redis://user:password@host:port/): {err}"
        ));
    }
    match super::errors::unavailable_or_store(err) {
        Error::StoreUnavailable(why) => {
            Error::StoreUnavailable(format!("cannot connect to Redis at {target}: {why}"))
        }
        other => other,
    }
}

/// What to do about a certificate that does not verify (`cause`: rustls's reason),
/// trusting the CA in `ca` if set.
fn trust_advice(cause: &str, ca: Option<&std::path::Path>) -> String {
    match ca {
        // webpki refuses a certificate marked as a CA when it is the server's own: a
        // self-signed certificate given as its own CA is the usual way to get here.
        _ if cause == "CaUsedAsEndEntity" => "Redis presents a CA certificate as its own (a \
             self-signed certificate given as its own CA, for instance), which TLS refuses: \
             make a CA, sign a server certificate for Redis's host with it (openssl req \
             -x509 for the CA, then openssl x509 -req -CA …), give Redis that certificate \
             (tls-cert-file) and rollboard the CA (REDIS_TLS_CA)"
            .to_owned(),
        Some(ca) => format!("the CA in {} (REDIS_TLS_CA) did not sign it", ca.display()),
        None => "if a private CA signed it, set REDIS_TLS_CA (redis_tls_ca) to that CA's PEM \
                 file"
            .to_owned(),
    }
}

/// The certificate problem behind a failed TLS handshake, if that is what failed
/// (rustls's `invalid peer certificate: <why>`; the redis crate keeps the cause only as
/// text behind its own error types).
fn certificate_error(err: &RedisError) -> Option<String> {
    const MARK: &str = "invalid peer certificate: ";
    let text = err.to_string();
    let mut why = &text[text.find(MARK)? + MARK.len()..];
    // rustls wraps webpki's reasons it has no variant for: `Other(OtherError(Why))`.
    for wrapper in ["Other(", "OtherError("] {
        why = why.strip_prefix(wrapper).unwrap_or(why);
    }
    let end = why
        .find(|c: char| !(c.is_alphanumeric() || c == '_'))
        .unwrap_or(why.len());
    Some(if end > 0 { &why[..end] } else { why }.to_owned())
}

/// The URL without its user and password, for logs and errors.
pub(crate) fn redact(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(scheme), Some(at)) if at > scheme => {
            format!("{}://***@{}", &url[..scheme], &url[at + 1..])
        }
        _ => url.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn redact_hides_credentials() {
        assert_eq!(
            super::redact("rediss://app:pw@host:6379/0"),
            "rediss://***@host:6379/0"
        );
        assert_eq!(super::redact("redis://host/"), "redis://host/");
    }

    #[test]
    fn urls_that_are_not_redis_urls_say_the_forms_that_are() {
        let options = super::RedisOptions::default();
        for url in ["http://127.0.0.1:6379/", "127.0.0.1:6379"] {
            let err = super::client(url, &options).err().unwrap();
            assert_eq!(
                err.to_string(),
                format!(
                    "store unavailable: invalid Redis URL {url:?}: expected \
                     redis://[user:password@]host[:port][/db] or rediss://… (TLS)"
                )
            );
        }
    }

    #[test]
    fn a_ca_used_as_the_servers_certificate_is_named_as_such() {
        let ca = std::path::Path::new("/etc/ca.pem");
        assert_eq!(
            super::trust_advice("CaUsedAsEndEntity", Some(ca)),
            "Redis presents a CA certificate as its own (a self-signed certificate given as \
             its own CA, for instance), which TLS refuses: make a CA, sign a server \
             certificate for Redis's host with it (openssl req -x509 for the CA, then openssl \
             x509 -req -CA …), give Redis that certificate (tls-cert-file) and rollboard the \
             CA (REDIS_TLS_CA)"
        );
        assert_eq!(
            super::trust_advice("BadSignature", Some(ca)),
            "the CA in /etc/ca.pem (REDIS_TLS_CA) did not sign it"
        );
    }
}
