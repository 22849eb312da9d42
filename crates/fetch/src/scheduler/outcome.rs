//! What the scheduler does with a finished request: robots.txt rules for
//! its host, its host's health ([`super::breaker`]), a retry that waits
//! alone, a redirect hop queued on its target's host, or the URL's final
//! [`Fetched`] value.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use tokio::time::Instant;
use url::Url;

use super::breaker::{Change, Health};
use super::{robots_delay, Done, Job, State, MAX_RETRY_AFTER_SECS};
use crate::robots::RobotsRules;
use crate::{ErrorKind, Fetched, Response};

/// Tries a URL answered `429 Too Many Requests` gets, at least.
pub(super) const RATE_LIMITED_RETRIES: u32 = 5;

impl State<'_> {
    pub(super) fn complete(&mut self, done: Done, follows: &impl Fn(&Url) -> bool) {
        let now = Instant::now();
        match done {
            Done::Robots { host: h, resp } => {
                let rules = Arc::new(RobotsRules::from_exchange(resp.as_ref(), &self.f.agent));
                self.f.robots.insert(self.hosts[h].origin.clone(), Arc::clone(&rules));
                self.hosts[h].floor = robots_delay(self.f.cfg.politeness.min_delay(), Some(&rules));
                self.repace(h);
                let host = &mut self.hosts[h];
                // From the answer, not from the dispatch: robots.txt opens the
                // host's first connection, and when thousands of hosts start
                // at once it can wait on the client side long enough that
                // counting from the dispatch let the first page reach the
                // server ~100 ms after it (seen at 2,667 hosts). The answer
                // is a time the request has surely arrived by.
                host.next_start = host.next_start.max(now + host.delay);
                host.robots = Some(rules);
                host.robots_pending = false;
                host.in_flight -= 1;
                self.reschedule(h, now);
            }
            Done::Page { host: h, mut job, result } => {
                self.hosts[h].in_flight -= 1;
                let probe = std::mem::take(&mut job.probe);
                if probe {
                    self.hosts[h].breaker.probe_ended();
                }
                self.pace(h, &job, &result, now);
                self.watch_health(h, &job, probe, &result, now);
                let down = self.hosts[h].breaker.is_down();
                // A failure while the host is in an outage is the host's: the
                // URL goes back without spending a retry, and is fetched when
                // a probe finds the host back (or ends as `host_down` when
                // it stays down). Its retries are for its own trouble.
                let outage = self.hosts[h].breaker.in_outage();
                let spent = if outage { 0 } else { job.retries };
                if let Some(wait) = self.retry_wait(h, &job, spent, &result).filter(|_| !down) {
                    // The URL waits alone: its host's other URLs go on at
                    // the host's pace (which the failure has slowed), and
                    // the breaker pauses the host when the server asks.
                    if !outage {
                        job.retries += 1;
                        self.report.retries += 1;
                    }
                    tracing::debug!(url = %job.url, retry = job.retries, ?wait, outage, "retried after its wait");
                    let host = &mut self.hosts[h];
                    host.pages = host.pages.saturating_sub(1);
                    if let Ok(resp) = &result {
                        job.elapsed += resp.elapsed;
                    }
                    if wait.is_zero() && !job.refused {
                        // Retried at its host's pace (a 429 without
                        // `Retry-After`): its next turn is the wait.
                        job.refused = true;
                        host.queue.again.push_back(Box::new(job));
                    } else if wait.is_zero() {
                        // Refused again: a URL the server keeps refusing
                        // (a page that always answers 429) waits for its
                        // next try as any retry does, a gap of its host's
                        // slowed pace, and past the straggler threshold
                        // it goes on with the next layer rather than
                        // holding this one (faults.test/status/429's six
                        // tries held layer 0 for 3.6 s in the real-site
                        // bench).
                        host.queue.waiting.push((now + host.delay, Box::new(job)));
                    } else {
                        host.queue.waiting.push((now + wait, Box::new(job)));
                    }
                    self.reschedule(h, now);
                    return;
                }
                match result {
                    Err(e) => self.finish(job, None, Some(e), None),
                    Ok(resp) => {
                        job.elapsed += resp.elapsed;
                        self.page_response(job, resp, follows);
                    }
                }
                if down {
                    self.fail_host(h);
                }
                self.reschedule(h, now);
            }
        }
    }

    /// Feeds a page's answer to its host's breaker: a pause when the
    /// server asks for one, opened or closed by its failures and answers
    /// (`probe`: this request was the breaker's probe).
    fn watch_health(
        &mut self,
        h: usize,
        job: &Job,
        probe: bool,
        result: &Result<Response, (ErrorKind, String)>,
        now: Instant,
    ) {
        let health = match result {
            Ok(r) if r.status == 429 => Health::Neutral,
            Ok(r) if r.status >= 500 => Health::Failed,
            Ok(r) if matches!(r.body_error, Some((ErrorKind::Timeout | ErrorKind::Reset, _))) => Health::Failed,
            Ok(_) => Health::Good,
            // No answer in time (the timeout, or no headers within the
            // low-speed window) is a failure, as a reset is: a host that
            // leaves every request unanswered is paused and probed.
            Err((ErrorKind::Timeout | ErrorKind::TooSlow | ErrorKind::Reset | ErrorKind::Connect, _)) => Health::Failed,
            // DNS, the address policy, a bug: nothing about the server.
            Err(_) => Health::Neutral,
        };
        let down_after = self.f.cfg.host_down_after;
        let host = &mut self.hosts[h];
        let mut change = host.breaker.record(health, probe, now, down_after);
        if let Ok(Response { status: 429 | 503, retry_after: Some(secs), .. }) = result {
            let wait = Duration::from_secs(*secs);
            match host.breaker.retry_after(crate::urlnorm::fingerprint(&job.url), wait, probe, now) {
                Change::None => {}
                paused => change = paused,
            }
        }
        let origin = &host.origin;
        match change {
            Change::None => {}
            Change::Paused(wait) => {
                self.report.host_pauses += 1;
                tracing::debug!(%origin, url = %job.url, ?wait, "Retry-After: the host pauses, then one probe");
            }
            Change::Opened(wait) | Change::Reopened(wait) => {
                self.report.breaker_opens += 1;
                tracing::info!(%origin, ?wait, "host keeps failing: paused, then one probe");
            }
            Change::Closed => tracing::info!(%origin, "host answers again"),
            Change::Down => {
                self.report.hosts_down += 1;
                tracing::warn!(%origin, failing_for = ?host.breaker.failing_for(now), "host is down: its queued URLs end as host_down rows");
            }
        }
    }

    /// Adaptive politeness: the answer's time and whether the server
    /// refused the pace (429, a 503 without `Retry-After`, a timeout) go
    /// into the host's pace, which sets its delay; the host's tally counts
    /// them for the summary.
    ///
    /// A 503 with `Retry-After` is not a refusal of the pace: the server
    /// said how long to wait, and the breaker pauses the host (once per
    /// URL, briefly unless its probe is asked too), so one URL that always
    /// answers so does not slow its whole host.
    fn pace(&mut self, h: usize, job: &Job, result: &Result<Response, (ErrorKind, String)>, now: Instant) {
        let (elapsed, refused) = match result {
            Ok(r) => {
                let overloaded = r.status == 429 || (r.status == 503 && r.retry_after.is_none());
                (r.elapsed, overloaded || matches!(r.body_error, Some((ErrorKind::Timeout, _))))
            }
            Err((kind, _)) => (self.f.cfg.timeout, *kind == ErrorKind::Timeout),
        };
        // A request that failed before any answer (refused, DNS) says
        // nothing about the server's speed.
        if result.is_err() && !refused {
            return;
        }
        let limits = self.limits(self.hosts[h].floor);
        let host = &mut self.hosts[h];
        host.tally.answers += 1;
        host.tally.response_ms += u64::try_from(elapsed.as_millis()).unwrap_or(u64::MAX);
        host.tally.last_answer = Some(now);
        if let Ok(r) = result {
            host.tally.too_many += u64::from(r.status == 429);
            host.tally.retry_after += u64::from(r.retry_after.is_some());
        }
        let url = refused.then(|| crate::urlnorm::fingerprint(&job.url));
        if host.pace.record(elapsed, url, now, limits) {
            host.tally.cuts += 1;
            self.report.backoffs += 1;
        }
        self.repace(h);
    }

    /// How long to wait before retrying `job`, when its result is transient
    /// and retries are left: Retry-After when the server gave one (capped;
    /// a longer one is not waited for), else exponential backoff with jitter.
    ///
    /// A request whose answer did not come in time (the timeout, or the
    /// low-speed limit before the headers) is retried once at most, and
    /// only if its host answered no other request while it waited: each
    /// try holds the URL for a whole window, a server that stayed silent
    /// twice seldom answers the third time, and a server that answers its
    /// other URLs meanwhile is silent on this one (in the real-site bench,
    /// the retry of one such URL was the crawl's last 10 s). A silent host
    /// is the breaker's: its failures pause it and a probe finds it back.
    /// A body that came too slowly is not retried: the server answered,
    /// and sends that URL that slowly; its row keeps what arrived. (A retry
    /// would hold the URL, and one of its host's connections, for another
    /// window: in the real-site bench the retry of one trickle, held back
    /// by its host's 5xx burst, was the crawl's last 10 s.)
    /// A `429` is retried up to [`RATE_LIMITED_RETRIES`] times (or
    /// `--retries`, if more; none with `--retries 0`), at once (its host's
    /// next turn) when it has no `Retry-After`.
    /// `spent`: the retries the URL has spent (0 while its host is in an
    /// outage, whose failures are not the URL's).
    fn retry_wait(
        &self,
        h: usize,
        job: &Job,
        spent: u32,
        result: &Result<Response, (ErrorKind, String)>,
    ) -> Option<Duration> {
        let slow = |kind: &ErrorKind| matches!(kind, ErrorKind::Timeout | ErrorKind::TooSlow);
        let retries = self.f.cfg.retries;
        let (retry_after, limit) = match result {
            Ok(r) if r.body_error.as_ref().is_some_and(|(k, _)| slow(k)) => return None,
            // The server asks the crawl to slow down, and the host's pace
            // slows: patience, not a verdict on the URL. Without a
            // `Retry-After` the URL is retried at its host's (slowed) pace,
            // its next turn: the host's pace is the answer to the 429, and
            // a backoff of the URL's own would only make it a straggler.
            Ok(r) if r.status == 429 && retries > 0 => {
                let limit = retries.max(RATE_LIMITED_RETRIES);
                if r.retry_after.is_none() {
                    return (spent < limit).then_some(Duration::ZERO);
                }
                (r.retry_after, limit)
            }
            Ok(r) if matches!(r.status, 408 | 500 | 502 | 503 | 504) => (r.retry_after, retries),
            Err((kind, _)) if slow(kind) => {
                let serves = self.hosts[h].breaker.answered().zip(job.sent).is_some_and(|(at, sent)| at > sent);
                if serves {
                    return None;
                }
                (None, retries.min(1))
            }
            Err((ErrorKind::Reset | ErrorKind::Connect, _)) => (None, retries),
            _ => return None,
        };
        if spent >= limit {
            return None;
        }
        if let Some(secs) = retry_after {
            return (secs <= MAX_RETRY_AFTER_SECS).then(|| Duration::from_secs(secs));
        }
        let base = self.f.cfg.backoff.max(self.f.cfg.politeness.min_delay());
        // Jitter in [0.75, 1.25), derived from the URL so runs are repeatable.
        let h = crate::urlnorm::fingerprint(&job.url) ^ u64::from(spent);
        #[allow(clippy::cast_precision_loss)]
        let jitter = 0.75 + (h % 1000) as f64 / 2000.0;
        Some(base.mul_f64(f64::from(1u32 << spent.min(16)) * jitter))
    }

    fn page_response(&mut self, mut job: Job, resp: Response, follows: &impl Fn(&Url) -> bool) {
        let is_redirect = matches!(resp.status, 301 | 302 | 303 | 307 | 308);
        if !is_redirect {
            let err = resp.body_error.clone().or_else(|| {
                resp.truncated.then(|| {
                    (ErrorKind::TooLarge, format!("body over the {} byte cap; truncated", self.f.cfg.max_body))
                })
            });
            self.finish(job, Some(resp), err, None);
            return;
        }
        let target = resp.location.as_deref().and_then(|loc| self.f.cfg.urls.resolve_link(&job.url, loc));
        let Some(target) = target else {
            let detail = format!("redirect {} without a usable Location ({:?})", resp.status, resp.location);
            self.finish(job, Some(resp), Some((ErrorKind::BadRedirect, detail)), None);
            return;
        };
        job.chain.push(crate::urlnorm::fingerprint(&job.url));
        let fp = crate::urlnorm::fingerprint(&target);
        if job.chain.contains(&fp) {
            let detail = format!("redirect loop back to {target} after {} hops", job.hops + 1);
            self.finish(job, Some(resp), Some((ErrorKind::RedirectLoop, detail)), None);
            return;
        }
        if job.hops + 1 > self.f.cfg.max_redirects {
            let detail = format!("more than {} redirects", self.f.cfg.max_redirects);
            self.finish(job, Some(resp), Some((ErrorKind::TooManyRedirects, detail)), None);
            return;
        }
        job.hops += 1;
        if follows(&target) {
            let h = self.host_index(&target);
            job.url = target;
            if resp.capture.is_some() {
                // The archive records every hop (docs/src/warc.md).
                job.redirects.push(resp);
            }
            self.enqueue_again(h, job);
        } else {
            // Another partition's site or out of scope: it becomes a link.
            self.finish(job, Some(resp), None, Some(target));
        }
    }

    pub(super) fn finish(
        &mut self,
        job: Job,
        response: Option<Response>,
        error: Option<(ErrorKind, String)>,
        redirect_out: Option<Url>,
    ) {
        let final_url = redirect_out.clone().unwrap_or_else(|| job.url.clone());
        self.outbox.push(Fetched {
            id: job.id,
            url: job.orig,
            final_url,
            redirects: job.hops,
            response,
            error,
            redirect_out,
            hops: job.redirects,
            started_at: job.started_at.unwrap_or_else(SystemTime::now),
            elapsed: job.elapsed,
        });
    }
}
