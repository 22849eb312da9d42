//! The resource governor's options (`--max-memory`, `--cpu-target`):
//! the governor's settings from them (their values parse in
//! `config::values`).

use super::Limits;
use crate::fetch::governor::GovernorConfig;

/// The governor's settings; neither option given: no governor.
pub(super) fn governor_config(o: &Limits) -> GovernorConfig {
    GovernorConfig { max_memory: o.max_memory.map(|s| s.0), cpu_target: o.cpu_target.map(|p| p.0) }
}
