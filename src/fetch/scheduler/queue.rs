//! A host's queue of work in the per-host scheduler.

use std::collections::VecDeque;

use super::Job;

/// A host's next piece of work: an input URL not tried yet (by id), or a
/// job coming back (a retry, a redirect hop).
pub(super) enum Queued {
    Fresh(usize),
    Again(Box<Job>),
}

/// A host's queued work. Its input URLs are a range of the partition's
/// `order` (every input id, grouped by host: 4 bytes a URL, where a queue
/// entry per URL took 16 and its queue's doubling up to as much again;
/// 11 MB at 605 k URLs); jobs coming back go first, since their URL has
/// been started already.
#[derive(Default)]
pub(super) struct HostQueue {
    pub(super) again: VecDeque<Box<Job>>,
    pub(super) next: usize,
    pub(super) end: usize,
}

impl HostQueue {
    pub(super) fn len(&self) -> usize {
        self.again.len() + (self.end - self.next)
    }

    pub(super) fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub(super) fn pop(&mut self, order: &[u32]) -> Option<Queued> {
        if let Some(job) = self.again.pop_front() {
            return Some(Queued::Again(job));
        }
        (self.next < self.end).then(|| {
            self.next += 1;
            Queued::Fresh(order[self.next - 1] as usize)
        })
    }

    /// Empties the queue into `ids` (to carry them over).
    pub(super) fn drain_into(&mut self, order: &[u32], ids: &mut Vec<usize>) {
        ids.extend(self.again.drain(..).map(|job| job.id));
        ids.extend(order[self.next..self.end].iter().map(|&id| id as usize));
        self.next = self.end;
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
        let mut q = HostQueue { again: VecDeque::new(), next: 0, end: 3 };
        assert_eq!(q.len(), 3);
        assert_eq!(q.pop(&order).map(id), Some(0));
        q.again.push_back(job(9));
        q.again.push_front(job(8));
        assert_eq!(q.len(), 4);
        assert_eq!(q.pop(&order).map(id), Some(8));
        assert_eq!(q.pop(&order).map(id), Some(9));
        assert_eq!(q.pop(&order).map(id), Some(2));
        q.again.push_back(job(7));
        let mut carried = Vec::new();
        q.drain_into(&order, &mut carried);
        assert_eq!(carried, vec![7, 5]);
        assert!(q.is_empty());
        assert!(q.pop(&order).is_none());
        let mut other = HostQueue { again: VecDeque::new(), next: 3, end: 5 };
        assert_eq!(
            [other.pop(&order).map(id), other.pop(&order).map(id), other.pop(&order).map(id)],
            [Some(1), Some(3), None]
        );
    }
}
