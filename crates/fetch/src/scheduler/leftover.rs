//! What becomes of the URLs a partition does not fetch now: carried into
//! the next layer with the reason and the retries they spent, or, on a host
//! that is down, ended as `host_down` rows (docs/src/politeness.md, "Retries
//! and failing hosts").

use tokio::time::Instant;
use url::Url;

use super::{Job, State};
use crate::ErrorKind;

impl State<'_> {
    /// Carries input ids over, unfetched, for `why`.
    pub(super) fn carry(&mut self, ids: impl IntoIterator<Item = usize>, why: &str) {
        let before = self.report.carried.len();
        self.report.carried.extend(ids);
        let n = (self.report.carried.len() - before) as u64;
        if n > 0 {
            *self.report.not_requested.entry(why.to_string()).or_default() += n;
        }
    }

    /// Carries every URL still queued when the partition ends early (its
    /// deadline, its layer's tail), with the retries it has spent and the
    /// time its retry waits for.
    pub(super) fn carry_the_rest(&mut self) {
        let why = self.ended_early.unwrap_or("unfinished");
        for h in 0..self.hosts.len() {
            let (jobs, ids) = self.hosts[h].queue.drain(&self.order);
            for (job, wait) in jobs {
                if job.retries > 0 {
                    self.report.retried.push((job.id, job.retries));
                }
                if let (Some(t), Ok(mut m)) = (wait, self.f.retry_at.lock()) {
                    m.insert(crate::urlnorm::fingerprint(&job.orig), t);
                }
                self.carry([job.id], why);
            }
            self.carry(ids, why);
        }
        // Stragglers are not a limit: they go on in the next layer.
        self.report.not_requested.remove("straggler");
    }

    /// The job of input URL `id`, with the retries it spent in earlier
    /// layers; none when it does not parse (it did not when queued either),
    /// or cannot be read (then it is carried).
    pub(super) fn fresh_job(&mut self, id: usize) -> Option<Job> {
        match self.urls.start(id) {
            Ok((text, retries)) => {
                let mut job = Job::new(id, Url::parse(&text).ok()?);
                job.retries = retries;
                Some(job)
            }
            Err(e) => {
                tracing::error!(id, "input URL cannot be read ({e}); carried over");
                self.carry([id], "unreadable");
                None
            }
        }
    }

    /// Ends every URL queued on host `h`, which is down, as a `host_down`
    /// row: no request is sent for them.
    pub(super) fn fail_host(&mut self, h: usize) {
        let detail = self.down_detail(h);
        let (jobs, ids) = self.hosts[h].queue.drain(&self.order);
        let n = jobs.len() + ids.len();
        for (job, _) in jobs {
            self.finish(*job, None, Some((ErrorKind::HostDown, detail.clone())), None);
        }
        for id in ids {
            if let Some(job) = self.fresh_job(id) {
                self.finish(job, None, Some((ErrorKind::HostDown, detail.clone())), None);
            }
        }
        if n > 0 {
            tracing::warn!(origin = %self.hosts[h].origin, urls = n, "host is down; its queued URLs end as host_down rows");
        }
    }

    /// Why a down host's URLs were not requested.
    pub(super) fn down_detail(&self, h: usize) -> String {
        let host = &self.hosts[h];
        format!(
            "{} kept failing for {} s (5xx, timeouts or refused connections) and did not answer a probe; no request was sent for this URL",
            host.origin,
            host.breaker.failing_for(Instant::now()).as_secs()
        )
    }
}
