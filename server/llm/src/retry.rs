//! Opening a model stream with retries: exponential backoff with jitter, Retry-After honoured,
//! only retryable errors retried, every retry reported, the wait cancellable.
//!
//! A stream counts as open once its first event arrives. Failures before that are retried;
//! failures after events were forwarded are the caller's to handle (it has shown partial output).

use std::time::Duration;

use futures::StreamExt;
use tokio_util::sync::CancellationToken;

use super::{ChatRequest, EventStream, LlmError, Provider};

/// How often and how patiently to retry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Attempts in all, the first included; `1` disables retries.
    pub max_attempts: u32,
    /// The wait before the first retry; each further retry doubles it (with jitter).
    pub base_delay: Duration,
    /// The longest computed wait. A provider's Retry-After longer than this is not waited out:
    /// the error is returned instead.
    pub max_delay: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            max_attempts: 4,
            base_delay: Duration::from_secs(1),
            max_delay: Duration::from_secs(60),
        }
    }
}

impl RetryPolicy {
    /// The wait before retry number `retry` (1-based) after `error`, or `None` when the
    /// provider asked for a longer wait than `max_delay`.
    pub fn delay_for(&self, retry: u32, error: &LlmError) -> Option<Duration> {
        let exponent = retry.saturating_sub(1).min(20);
        let backoff = self
            .base_delay
            .saturating_mul(1u32 << exponent)
            .min(self.max_delay);
        // Equal jitter: half fixed, half random, so concurrent clients spread out.
        let jittered = backoff.mul_f64(0.5 + fastrand::f64() * 0.5);
        match error {
            LlmError::RateLimited {
                retry_after: Some(wait),
            } => (*wait <= self.max_delay).then(|| jittered.max(*wait)),
            _ => Some(jittered),
        }
    }
}

/// One retry about to happen, for the caller to show (e.g. as a notice).
#[derive(Debug, Clone, PartialEq)]
pub struct RetryNotice {
    /// The attempt that failed, 1-based.
    pub failed_attempt: u32,
    pub max_attempts: u32,
    /// How long until the next attempt.
    pub delay: Duration,
    pub error: LlmError,
}

/// Opens `request` on `provider`, retrying retryable failures that happen before the first
/// event. `on_retry` is called before each wait. Returns the stream with its first event still
/// in it, or the last error (`Cancelled` as soon as `cancel` fires, also during a wait).
pub async fn stream_with_retry<F>(
    provider: &dyn Provider,
    request: &ChatRequest,
    policy: &RetryPolicy,
    cancel: &CancellationToken,
    mut on_retry: F,
) -> Result<EventStream, LlmError>
where
    F: FnMut(&RetryNotice) + Send,
{
    let max_attempts = policy.max_attempts.max(1);
    let mut attempt = 1;
    loop {
        let error = match open_first_event(provider, request, cancel).await {
            Ok(stream) => return Ok(stream),
            Err(error) => error,
        };
        if !error.is_retryable() || attempt >= max_attempts {
            return Err(error);
        }
        let Some(delay) = policy.delay_for(attempt, &error) else {
            return Err(error);
        };
        on_retry(&RetryNotice {
            failed_attempt: attempt,
            max_attempts,
            delay,
            error,
        });
        tokio::select! {
            biased;
            () = cancel.cancelled() => return Err(LlmError::Cancelled),
            () = tokio::time::sleep(delay) => {}
        }
        attempt += 1;
    }
}

/// Opens the stream and waits for its first event; the returned stream yields that event again.
async fn open_first_event(
    provider: &dyn Provider,
    request: &ChatRequest,
    cancel: &CancellationToken,
) -> Result<EventStream, LlmError> {
    let mut stream = provider.stream(request, cancel.clone()).await?;
    // The provider's stream selects on `cancel` itself, so this await ends promptly.
    match stream.next().await {
        Some(Ok(first)) => Ok(Box::pin(
            futures::stream::once(async move { Ok(first) }).chain(stream),
        )),
        Some(Err(error)) => Err(error),
        None => Err(LlmError::Truncated),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_within_jitter_and_caps() {
        let policy = RetryPolicy {
            max_attempts: 10,
            base_delay: Duration::from_millis(100),
            max_delay: Duration::from_millis(1000),
        };
        let error = LlmError::Truncated;
        for _ in 0..50 {
            let first = policy.delay_for(1, &error).unwrap();
            assert!(first >= Duration::from_millis(50) && first <= Duration::from_millis(100));
            let third = policy.delay_for(3, &error).unwrap();
            assert!(third >= Duration::from_millis(200) && third <= Duration::from_millis(400));
            let late = policy.delay_for(30, &error).unwrap();
            assert!(late >= Duration::from_millis(500) && late <= Duration::from_millis(1000));
        }
    }

    #[test]
    fn retry_after_is_a_floor_unless_too_long() {
        let policy = RetryPolicy {
            max_attempts: 3,
            base_delay: Duration::from_millis(10),
            max_delay: Duration::from_secs(5),
        };
        let limited = |secs| LlmError::RateLimited {
            retry_after: Some(Duration::from_secs(secs)),
        };
        assert!(policy.delay_for(1, &limited(2)).unwrap() >= Duration::from_secs(2));
        assert_eq!(policy.delay_for(1, &limited(6)), None);
    }
}
