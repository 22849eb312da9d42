//! The processes executor: each task a child process of the same binary
//! (`layercrawl task <phase> --data URL --layer L --partition I`), W at a
//! time. It is the cluster path on one machine: tasks share nothing but
//! the data store, as pods do.
//!
//! Tasks start largest first, by the cost the driver orders them by (the
//! time each partition took in the layer before), so the longest one does
//! not start last and hold the phase. A task that fails (killed, out of
//! memory, a storage error) is started again, up to [`ATTEMPTS`] times in
//! all; its killed attempt's files are never published, so nothing is lost
//! or doubled. A task that exits with code 2 (bad input, or fenced off by
//! a newer lease generation) is not retried.
//!
//! Each task gets the driver's lease generation and what is left of its
//! fence (`--lease-generation`, `--fence-ms`): it watches the lease on its
//! own, so a task whose driver was stopped stops too, and never commits
//! once another run took the lease over (docs/src/cluster.md, "One run per
//! data location"). No task starts once the driver's fence has run out.

use std::collections::VecDeque;
use std::path::PathBuf;
use std::process::Stdio;

use futures::future::BoxFuture;
use futures::FutureExt;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use tokio::io::AsyncReadExt;

use super::{ExecError, Executor, Phase, PhaseRun};

/// Attempts of one task before the phase fails.
pub const ATTEMPTS: u32 = 3;
/// Lines of a failed task's error output kept for the message.
const ERROR_LINES: usize = 6;

/// Runs tasks as child processes.
pub struct Processes {
    /// The binary (this one, unless a test says otherwise).
    pub exe: PathBuf,
    /// The data location as the children open it.
    pub data: String,
    pub workers: usize,
    /// Progress bars on stderr.
    pub progress: bool,
    /// The driver's fence (its lease's generation and how long it still
    /// holds), handed to each task; none outside a run.
    pub fence: Option<std::sync::Arc<crate::fence::Fence>>,
}

impl Processes {
    /// Children of this very binary.
    ///
    /// # Errors
    /// When the running binary's path cannot be found.
    pub fn new(data: &str, workers: usize, progress: bool) -> Result<Self, ExecError> {
        let exe = std::env::current_exe()
            .map_err(|e| ExecError::Setup(format!("cannot find this program's path to start tasks: {e}")))?;
        Ok(Self { exe, data: data.to_string(), workers: workers.max(1), progress, fence: None })
    }

    /// Its tasks act under `fence` (the driver's lease).
    #[must_use]
    pub fn with_fence(mut self, fence: std::sync::Arc<crate::fence::Fence>) -> Self {
        self.fence = Some(fence);
        self
    }

    fn args(&self, run: &PhaseRun, part: u32) -> Vec<String> {
        let mut a = vec!["task".into(), run.phase.as_str().into(), "--data".into(), self.data.clone()];
        if let Some(f) = &self.fence {
            a.extend([
                "--lease-generation".into(),
                f.generation().to_string(),
                "--fence-ms".into(),
                f.remaining().as_millis().to_string(),
            ]);
        }
        // The merge's layer is the crawl's last, catch-up layers included.
        a.extend(["--layer".into(), run.layer.to_string()]);
        if run.phase != Phase::Merge {
            a.extend(["--partition".into(), part.to_string()]);
        }
        a
    }

    /// Runs one attempt of one task; the error says how it ended.
    async fn attempt(&self, run: &PhaseRun, part: u32) -> Result<(), Failure> {
        if self.fence.as_ref().is_some_and(|f| !f.holds()) {
            let why = "not started: the run's lease could not be renewed in time, or was taken over".to_string();
            return Err(Failure { why, retry: false });
        }
        let mut cmd = tokio::process::Command::new(&self.exe);
        cmd.args(self.args(run, part))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        die_with_parent(&mut cmd);
        let mut child = cmd
            .spawn()
            .map_err(|e| Failure { why: format!("cannot start {}: {e}", self.exe.display()), retry: false })?;
        let mut err = String::new();
        if let Some(mut stderr) = child.stderr.take() {
            // Read while it runs, so a chatty task never blocks on a full pipe.
            let _ = stderr.read_to_string(&mut err).await;
        }
        let status =
            child.wait().await.map_err(|e| Failure { why: format!("waiting for the task: {e}"), retry: true })?;
        if status.success() {
            return Ok(());
        }
        let tail: Vec<&str> = err.lines().rev().take(ERROR_LINES).collect::<Vec<_>>().into_iter().rev().collect();
        let how = match status.code() {
            Some(code) => format!("exit code {code}"),
            None => {
                use std::os::unix::process::ExitStatusExt;
                format!("killed by signal {}", status.signal().unwrap_or(0))
            }
        };
        Err(Failure { why: format!("{how}: {}", tail.join(" / ")), retry: status.code() != Some(2) })
    }
}

/// A task must not outlive its driver: a driver killed with `kill -9`
/// cannot kill its children, and a task crawling on alone would double
/// its hosts' request rate when the driver is started again. On Linux the
/// kernel kills the task when the driver dies (`PR_SET_PDEATHSIG`; the
/// driver starts tasks from its runtime's worker threads, which live as
/// long as the driver).
fn die_with_parent(cmd: &mut tokio::process::Command) {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: between fork and exec only async-signal-safe calls are
        // allowed; prctl is one, and the closure allocates nothing.
        unsafe {
            cmd.pre_exec(|| {
                if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) == 0 {
                    Ok(())
                } else {
                    Err(std::io::Error::last_os_error())
                }
            });
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = cmd;
}

/// How an attempt failed, and whether another attempt may succeed.
struct Failure {
    why: String,
    retry: bool,
}

impl Executor for Processes {
    fn name(&self) -> &'static str {
        "processes"
    }

    fn run<'a>(&'a self, run: &'a PhaseRun) -> BoxFuture<'a, Result<(), ExecError>> {
        async move {
            let bar = self.bar(run);
            let mut queue: VecDeque<(u32, u32)> = run.parts.iter().map(|&p| (p, 1)).collect();
            let mut running = futures::stream::FuturesUnordered::new();
            let mut failed = Vec::new();
            loop {
                while running.len() < self.workers {
                    let Some((part, n)) = queue.pop_front() else { break };
                    running.push(async move { (part, n, self.attempt(run, part).await) });
                }
                let Some((part, n, result)) = futures::StreamExt::next(&mut running).await else { break };
                match result {
                    Ok(()) => bar.inc(1),
                    Err(f) if f.retry && n < ATTEMPTS => {
                        tracing::warn!(
                            "{} failed (attempt {n} of {ATTEMPTS}), starting it again: {}",
                            run.task_name(part),
                            f.why
                        );
                        // First in line: a retried task is as large as it was.
                        queue.push_front((part, n + 1));
                    }
                    Err(f) => {
                        tracing::error!("{} failed (attempt {n} of {ATTEMPTS}): {}", run.task_name(part), f.why);
                        failed.push((part, f.why));
                        bar.inc(1);
                    }
                }
            }
            bar.finish();
            if failed.is_empty() {
                Ok(())
            } else {
                failed.sort_by_key(|(p, _)| *p);
                Err(ExecError::Failed { phase: run.phase.as_str(), layer: run.layer, failed })
            }
        }
        .boxed()
    }
}

impl Processes {
    fn bar(&self, run: &PhaseRun) -> ProgressBar {
        let target = if self.progress { ProgressDrawTarget::stderr() } else { ProgressDrawTarget::hidden() };
        let bar = ProgressBar::with_draw_target(Some(run.parts.len() as u64), target);
        bar.set_style(
            ProgressStyle::with_template("{prefix:>18} [{bar:30}] {pos}/{len} tasks [{elapsed_precise}]")
                .expect("template is valid")
                .progress_chars("=> "),
        );
        bar.set_prefix(match run.phase {
            Phase::Merge => "merge".to_string(),
            p => format!("layer {} {}", run.layer, p.as_str()),
        });
        bar
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The merge task is told the run's last layer: a crawl with catch-up
    /// layers past its depth merges them too (without `--layer` the task
    /// merged up to the depth and the run failed at its end).
    #[test]
    fn the_merge_task_is_told_the_run_s_last_layer() {
        let p = Processes {
            exe: PathBuf::from("layercrawl"),
            data: "s3://b/c".into(),
            workers: 2,
            progress: false,
            fence: None,
        };
        let merge = p.args(&PhaseRun { phase: Phase::Merge, layer: 3, parts: vec![0] }, 0);
        assert_eq!(merge, ["task", "merge", "--data", "s3://b/c", "--layer", "3"]);
        let map = p.args(&PhaseRun { phase: Phase::Map, layer: 1, parts: vec![0, 1] }, 1);
        assert_eq!(map, ["task", "map", "--data", "s3://b/c", "--layer", "1", "--partition", "1"]);
    }
}
