//! `TIDEMARK_BENCH_SLOWDOWN=N`: N threads spin beside Tidemark's side of every phase, a
//! deliberate slowdown that shows the regression check failing. Unset (or 0): nothing runs.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// The environment variable.
pub const VAR: &str = "TIDEMARK_BENCH_SLOWDOWN";

/// Spinning threads; they stop when this is dropped.
#[derive(Debug)]
pub struct Slowdown {
    stop: Arc<AtomicBool>,
    threads: Vec<std::thread::JoinHandle<()>>,
}

impl Slowdown {
    /// Starts the threads the environment asks for.
    pub fn from_env() -> Self {
        let n = std::env::var(VAR)
            .ok()
            .and_then(|v| v.parse::<usize>().ok())
            .unwrap_or(0);
        let stop = Arc::new(AtomicBool::new(false));
        let threads = (0..n)
            .map(|_| {
                let stop = stop.clone();
                std::thread::spawn(move || {
                    let mut x = 0u64;
                    while !stop.load(Ordering::Relaxed) {
                        x = std::hint::black_box(
                            x.wrapping_mul(6364136223846793005).wrapping_add(1),
                        );
                    }
                })
            })
            .collect();
        Self { stop, threads }
    }
}

impl Drop for Slowdown {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}
