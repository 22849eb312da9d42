//! A host's queue of work in the per-host scheduler.

use std::collections::VecDeque;

use tokio::time::Instant;

use super::Job;

/// A host's next piece of work: an input URL not tried yet (by id), or a
/// job coming back (a retry, a redirect hop).
pub(super) enum Queued {
    Fresh(usize),
    Again(Box<Job>),
}

/// A job taken out of a queue, with the instant its retry waits for.
pub(super) type Drained = (Box<Job>, Option<Instant>);

/// A host's queued work. Its input URLs are a range of the partition's
/// `order` (every input id, grouped by host: 4 bytes a URL, where a queue
/// entry per URL took 16 and its queue's doubling up to as much again;
/// 11 MB at 605 k URLs); jobs coming back go first, since their URL has
/// been started already. Jobs waiting for their retry (a `Retry-After`, a
/// backoff) wait in `waiting`, apart, so that one URL's wait never holds
/// the host's other URLs.
#[derive(Default)]
pub(super) struct HostQueue {
    pub(super) again: VecDeque<Box<Job>>,
    /// Jobs that may not start before their instant (few: the host's
    /// retries), in no order.
    pub(super) waiting: Vec<(Instant, Box<Job>)>,
    /// URLs their source holds back for now (`Admit::Later`), asked about
    /// again together at `held_at`: one pass over them, however many.
    pub(super) held: Vec<Job>,
    pub(super) held_at: Option<Instant>,
    pub(super) next: usize,
    pub(super) end: usize,
}

impl HostQueue {
    pub(super) fn len(&self) -> usize {
        self.again.len() + self.waiting.len() + self.held.len() + (self.end - self.next)
    }

    /// Holds `job` back until `at` ([`Self::held`]).
    pub(super) fn hold(&mut self, job: Job, at: Instant) {
        self.held.push(job);
        self.held_at = Some(self.held_at.map_or(at, |t| t.min(at)));
    }

    pub(super) fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// When the queue's next job may start: `now` if one may, else the
    /// earliest retry; none when empty.
    pub(super) fn ready_at(&self, now: Instant) -> Option<Instant> {
        if !self.again.is_empty() || self.next < self.end {
            return Some(now);
        }
        self.waiting.iter().map(|(t, _)| *t).chain(self.held_at).min().map(|t| t.max(now))
    }

    /// The next job that may start now: a job coming back, a retry whose
    /// time has come (the earliest), then the next input URL.
    pub(super) fn pop(&mut self, order: &[u32], now: Instant) -> Option<Queued> {
        if self.held_at.is_some_and(|t| t <= now) {
            self.held_at = None;
            self.again.extend(self.held.drain(..).map(Box::new));
        }
        if let Some(job) = self.again.pop_front() {
            return Some(Queued::Again(job));
        }
        let due = self.waiting.iter().enumerate().filter(|(_, (t, _))| *t <= now).min_by_key(|(_, (t, _))| *t);
        if let Some((i, _)) = due {
            return Some(Queued::Again(self.waiting.swap_remove(i).1));
        }
        (self.next < self.end).then(|| {
            self.next += 1;
            Queued::Fresh(order[self.next - 1] as usize)
        })
    }

    /// The next job for a probe of a host that failed: an input URL not
    /// tried yet first (its failure spends no URL's second chance), then
    /// as [`Self::pop`].
    pub(super) fn pop_probe(&mut self, order: &[u32], now: Instant) -> Option<Queued> {
        if self.next < self.end {
            self.next += 1;
            return Some(Queued::Fresh(order[self.next - 1] as usize));
        }
        self.pop(order, now)
    }

    /// Empties the queue: jobs (with their retries so far and the instant
    /// they wait for, if any) and input ids.
    pub(super) fn drain(&mut self, order: &[u32]) -> (Vec<Drained>, Vec<usize>) {
        let mut jobs: Vec<Drained> = self.again.drain(..).map(|job| (job, None)).collect();
        jobs.extend(self.waiting.drain(..).map(|(t, job)| (job, Some(t))));
        jobs.extend(self.held.drain(..).map(|job| (Box::new(job), None)));
        self.held_at = None;
        let ids = order[self.next..self.end].iter().map(|&id| id as usize).collect();
        self.next = self.end;
        (jobs, ids)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use url::Url;

    fn job(id: usize) -> Box<Job> {
        Box::new(Job::new(id, Url::parse("http://a.test/").expect("url")))
    }

    fn id(q: Queued) -> usize {
        match q {
            Queued::Fresh(id) => id,
            Queued::Again(job) => job.id,
        }
    }

    #[test]
    fn a_host_queue_serves_jobs_coming_back_first_then_its_range_of_input() {
        // Two hosts' input ids, grouped: host 0 owns order[0..3], host 1 order[3..5].
        let order = [0u32, 2, 5, 1, 3];
        let now = Instant::now();
        let mut q = HostQueue { next: 0, end: 3, ..HostQueue::default() };
        assert_eq!(q.len(), 3);
        assert_eq!(q.pop(&order, now).map(id), Some(0));
        q.again.push_back(job(9));
        q.again.push_front(job(8));
        assert_eq!(q.len(), 4);
        assert_eq!(q.pop(&order, now).map(id), Some(8));
        assert_eq!(q.pop(&order, now).map(id), Some(9));
        assert_eq!(q.pop(&order, now).map(id), Some(2));
        q.again.push_back(job(7));
        let (jobs, ids) = q.drain(&order);
        assert_eq!((jobs.iter().map(|(j, _)| j.id).collect::<Vec<_>>(), ids), (vec![7], vec![5]));
        assert!(q.is_empty());
        assert!(q.pop(&order, now).is_none() && q.ready_at(now).is_none());
        let mut other = HostQueue { next: 3, end: 5, ..HostQueue::default() };
        assert_eq!(
            [other.pop(&order, now).map(id), other.pop(&order, now).map(id), other.pop(&order, now).map(id)],
            [Some(1), Some(3), None]
        );
    }

    #[test]
    fn urls_held_back_wait_apart_and_come_back_together_at_their_instant() {
        let order = [0u32, 1];
        let now = Instant::now();
        let at = now + std::time::Duration::from_millis(40);
        let mut q = HostQueue { next: 0, end: 2, ..HostQueue::default() };
        q.hold(*job(10), at);
        q.hold(*job(11), now + std::time::Duration::from_secs(9));
        assert_eq!(q.len(), 4);
        assert_eq!([q.pop(&order, now).map(id), q.pop(&order, now).map(id)], [Some(0), Some(1)], "input first");
        assert!(q.pop(&order, now).is_none(), "held until their instant");
        assert_eq!(q.ready_at(now), Some(at), "the earliest instant asked for");
        assert_eq!([q.pop(&order, at).map(id), q.pop(&order, at).map(id)], [Some(10), Some(11)]);
        assert!(q.is_empty() && q.held_at.is_none());
        q.hold(*job(12), at);
        let (jobs, ids) = q.drain(&order);
        assert_eq!((jobs.iter().map(|(j, _)| j.id).collect::<Vec<_>>(), ids), (vec![12], vec![]));
        assert!(q.ready_at(now).is_none());
    }

    #[test]
    fn a_retry_waits_apart_and_never_holds_the_rest_of_its_host() {
        let order = [0u32, 1, 2];
        let now = Instant::now();
        let (soon, later) = (now + std::time::Duration::from_secs(1), now + std::time::Duration::from_secs(5));
        let mut q = HostQueue { next: 1, end: 3, ..HostQueue::default() };
        q.waiting.push((later, job(20)));
        q.waiting.push((soon, job(10)));
        assert_eq!(q.len(), 4);
        assert_eq!(q.ready_at(now), Some(now), "input URLs may start now");
        assert_eq!([q.pop(&order, now).map(id), q.pop(&order, now).map(id)], [Some(1), Some(2)]);
        assert!(q.pop(&order, now).is_none(), "both retries still wait");
        assert_eq!(q.ready_at(now), Some(soon));
        assert_eq!(q.pop(&order, later).map(id), Some(10), "the earliest first");
        assert_eq!(q.pop(&order, later).map(id), Some(20));
        assert!(q.is_empty());
    }
}
