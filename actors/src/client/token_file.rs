//! A bearer token read from a file and read again when the file changes: projected
//! ServiceAccount tokens rotate hourly, and a long run must not fail at the first rotation.
//!
//! kube-rs re-reads a `tokenFile` once a minute on a wall-clock timer; this layer instead
//! looks at the file's modification time at most every [`TOKEN_FILE_CHECK_INTERVAL`] and
//! re-reads it when it moved, so a rotation is picked up within a second. If a re-read fails
//! (the file is briefly missing while the kubelet swaps it), the last token stays in use, as
//! client-go does (kubernetes#68164).

use std::path::PathBuf;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant, SystemTime};

use http::{HeaderValue, Request};
use parking_lot::Mutex;

use super::ClientError;

/// How often the token file's modification time is looked at.
pub const TOKEN_FILE_CHECK_INTERVAL: Duration = Duration::from_secs(1);

struct Cached {
    header: HeaderValue,
    modified: Option<SystemTime>,
    checked: Instant,
}

struct State {
    path: PathBuf,
    cached: Mutex<Cached>,
}

/// A tower layer that sets `Authorization: Bearer <token from the file>` on every request.
#[derive(Clone)]
pub struct BearerTokenFile {
    state: Arc<State>,
}

impl std::fmt::Debug for BearerTokenFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BearerTokenFile")
            .field("path", &self.state.path)
            .finish_non_exhaustive()
    }
}

fn header_of(token: &str) -> Option<HeaderValue> {
    let mut v = HeaderValue::from_str(&format!("Bearer {}", token.trim())).ok()?;
    v.set_sensitive(true);
    Some(v)
}

fn modified(path: &PathBuf) -> Option<SystemTime> {
    std::fs::metadata(path).and_then(|m| m.modified()).ok()
}

impl BearerTokenFile {
    /// Reads the token now: a file that cannot be read at start is a configuration error.
    pub fn open(path: PathBuf) -> Result<Self, ClientError> {
        let token = std::fs::read_to_string(&path).map_err(|source| ClientError::Read {
            path: path.clone(),
            source,
        })?;
        let header = header_of(&token).ok_or_else(|| ClientError::Read {
            path: path.clone(),
            source: std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                "the token is not a valid header value",
            ),
        })?;
        Ok(Self {
            state: Arc::new(State {
                cached: Mutex::new(Cached {
                    header,
                    modified: modified(&path),
                    checked: Instant::now(),
                }),
                path,
            }),
        })
    }

    /// The current `Authorization` value, re-reading the file if it changed.
    pub fn header(&self) -> HeaderValue {
        let mut cached = self.state.cached.lock();
        if cached.checked.elapsed() >= TOKEN_FILE_CHECK_INTERVAL {
            cached.checked = Instant::now();
            let now_modified = modified(&self.state.path);
            if now_modified.is_some() && now_modified != cached.modified {
                match std::fs::read_to_string(&self.state.path)
                    .ok()
                    .as_deref()
                    .and_then(header_of)
                {
                    Some(h) => {
                        cached.header = h;
                        cached.modified = now_modified;
                        tracing::info!(path = %self.state.path.display(), "bearer token file changed; using the new token");
                    }
                    None => {
                        tracing::warn!(path = %self.state.path.display(), "bearer token file changed but cannot be read; keeping the last token");
                    }
                }
            }
        }
        cached.header.clone()
    }
}

impl<S> tower::Layer<S> for BearerTokenFile {
    type Service = WithBearerTokenFile<S>;

    fn layer(&self, inner: S) -> Self::Service {
        WithBearerTokenFile {
            token: self.clone(),
            inner,
        }
    }
}

/// The service [`BearerTokenFile`] wraps around the client's stack.
#[derive(Clone, Debug)]
pub struct WithBearerTokenFile<S> {
    token: BearerTokenFile,
    inner: S,
}

impl<S, B> tower::Service<Request<B>> for WithBearerTokenFile<S>
where
    S: tower::Service<Request<B>>,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = S::Future;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut req: Request<B>) -> Self::Future {
        req.headers_mut()
            .insert(http::header::AUTHORIZATION, self.token.header());
        self.inner.call(req)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp_file(name: &str, text: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("tidemark-token-{}-{name}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let path = dir.join("token");
        std::fs::write(&path, text).expect("write");
        path
    }

    #[test]
    fn a_rotated_token_is_used_after_the_check_interval() {
        let path = temp_file("rotate", "first\n");
        let layer = BearerTokenFile::open(path.clone()).expect("open");
        assert_eq!(layer.header(), "Bearer first");
        std::thread::sleep(Duration::from_millis(20));
        std::fs::write(&path, "second").expect("rotate");
        // Pretend the last check was long ago.
        layer.state.cached.lock().checked = Instant::now() - TOKEN_FILE_CHECK_INTERVAL;
        layer.state.cached.lock().modified = Some(SystemTime::UNIX_EPOCH);
        assert_eq!(layer.header(), "Bearer second");
    }

    #[test]
    fn a_vanished_file_keeps_the_last_token() {
        let path = temp_file("vanish", "kept");
        let layer = BearerTokenFile::open(path.clone()).expect("open");
        std::fs::remove_file(&path).expect("remove");
        layer.state.cached.lock().checked = Instant::now() - TOKEN_FILE_CHECK_INTERVAL;
        assert_eq!(layer.header(), "Bearer kept");
    }

    #[test]
    fn a_missing_file_at_start_is_an_error_that_names_it() {
        let err = BearerTokenFile::open(PathBuf::from("/nonexistent/token")).expect_err("missing");
        assert!(err.to_string().contains("/nonexistent/token"), "{err}");
    }
}
