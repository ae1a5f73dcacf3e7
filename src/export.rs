//! Exporting a simulated run in the recorded-trace format of [`crate::replay`]
//! (`sim --export-trace FILE`), and the pod differ that `serve` shares with it, so a recording
//! of a served run and the run's own export see the same pod changes in the same order. It
//! runs a [`World`], so it sits above `world`, which itself reads traces through `replay`.

use crate::replay::{
    FORMAT, Header, PodEvent, PodState, TraceLine, VERSION, header_json, line_json, pod_state_of,
    rfc3339,
};
use crate::resources::Pod;
use crate::scenario::Scenario;
use crate::trace::Record;
use crate::world::{RunSettings, Sink, World, WorldError};
use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;

/// One pod change found by [`PodDiff`].
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct PodChange {
    /// Whether the pod was added, modified or deleted.
    pub event: PodEvent,
    /// The pod as it is now (for `deleted`, as it was last seen).
    pub pod: Pod,
    /// The pod's state as the trace format records it.
    pub state: PodState,
    /// False when only fields outside the trace format changed (annotations, readiness).
    pub state_changed: bool,
}

/// Remembers every pod's last seen version and reports what changed since.
#[derive(Debug, Default)]
pub(crate) struct PodDiff {
    known: BTreeMap<String, (Pod, PodState)>,
}

impl PodDiff {
    /// Changes since the last call: added and modified pods by name, then deleted ones by
    /// name. A pod whose uid changed under the same name is reported deleted, then added.
    pub(crate) fn diff<'a>(&mut self, pods: impl Iterator<Item = &'a Pod>) -> Vec<PodChange> {
        let mut changes = Vec::new();
        let mut deleted = Vec::new();
        let mut seen = BTreeMap::new();
        for pod in pods {
            seen.insert(pod.name.clone(), ());
            let state = pod_state_of(pod);
            match self.known.get(&pod.name) {
                Some((old, _))
                    if old.uid == pod.uid && old.resource_version == pod.resource_version => {}
                Some((old, old_state)) if old.uid == pod.uid => changes.push(PodChange {
                    event: PodEvent::Modified,
                    pod: pod.clone(),
                    state_changed: *old_state != state,
                    state: state.clone(),
                }),
                other => {
                    if let Some((old, old_state)) = other {
                        deleted.push(gone(old, old_state));
                    }
                    changes.push(PodChange {
                        event: PodEvent::Added,
                        pod: pod.clone(),
                        state: state.clone(),
                        state_changed: true,
                    });
                }
            }
            self.known.insert(pod.name.clone(), (pod.clone(), state));
        }
        let vanished: Vec<String> = self
            .known
            .keys()
            .filter(|name| !seen.contains_key(*name))
            .cloned()
            .collect();
        for name in vanished {
            let (old, old_state) = self.known.remove(&name).expect("listed above");
            deleted.push(gone(&old, &old_state));
        }
        // A replaced pod's deletion comes before its new incarnation, as a watch shows it.
        deleted.extend(changes);
        deleted
    }
}

fn gone(pod: &Pod, state: &PodState) -> PodChange {
    PodChange {
        event: PodEvent::Deleted,
        pod: pod.clone(),
        state: state.clone(),
        state_changed: true,
    }
}

/// True for the records that follow a change to a pod object.
pub(crate) fn touches_pods(record: &Record) -> bool {
    matches!(
        record,
        Record::PodCreated { .. }
            | Record::PodScheduled { .. }
            | Record::PodRunning { .. }
            | Record::ContainerDied { .. }
            | Record::ContainerRestarted { .. }
            | Record::PodPhase { .. }
            | Record::PodDeleted { .. }
            | Record::PodGone { .. }
            | Record::NodeLost { .. }
    )
}

/// A sink that passes records on and notes whether the current event touched a pod.
pub(crate) struct Touched<'a> {
    /// The sink every record goes on to.
    pub inner: &'a mut dyn Sink,
    /// Set when a record passed on touched a pod; the caller clears it per event.
    pub touched: bool,
}

impl Sink for Touched<'_> {
    fn record(&mut self, t_ms: u64, node: &str, record: &Record) {
        self.touched |= touches_pods(record);
        self.inner.record(t_ms, node, record);
    }
}

/// Writes a run's pod changes as a recorded trace, one line per change of a format field.
pub(crate) struct Exporter<W: Write> {
    out: W,
    diff: PodDiff,
    lines: u64,
}

impl<W: Write> Exporter<W> {
    /// Start a trace on `out` with its header.
    pub(crate) fn new(mut out: W, header: &Header) -> std::io::Result<Exporter<W>> {
        writeln!(out, "{}", header_json(header))?;
        Ok(Exporter {
            out,
            diff: PodDiff::default(),
            lines: 0,
        })
    }

    /// Write what changed in `pods` at `t_ms`.
    pub(crate) fn observe<'a>(
        &mut self,
        t_ms: u64,
        pods: impl Iterator<Item = &'a Pod>,
    ) -> std::io::Result<()> {
        let changes = self.diff.diff(pods);
        self.write_changes(t_ms, changes)
    }

    /// Write changes found by a [`PodDiff`] the caller ran itself (those whose trace state
    /// changed), at `t_ms`.
    pub(crate) fn write_changes(
        &mut self,
        t_ms: u64,
        changes: Vec<PodChange>,
    ) -> std::io::Result<()> {
        for change in changes.into_iter().filter(|change| change.state_changed) {
            let line = TraceLine {
                t_ms,
                event: change.event,
                state: change.state,
            };
            writeln!(self.out, "{}", line_json(&line))?;
            self.lines += 1;
        }
        Ok(())
    }

    /// Lines written after the header.
    pub(crate) fn lines(&self) -> u64 {
        self.lines
    }

    /// Flush and hand back the writer.
    pub(crate) fn finish(mut self) -> std::io::Result<W> {
        self.out.flush()?;
        Ok(self.out)
    }
}

/// The header of a simulated run's export: `t_ms` is simulated time from the epoch.
pub(crate) fn export_header(scenario: &Scenario, settings: &RunSettings) -> Header {
    Header {
        format: FORMAT.to_owned(),
        version: VERSION,
        source: format!(
            "elasticsim export: scenario {} seed {} policy {}",
            scenario.name,
            settings.seed,
            settings.policy.name()
        ),
        namespace: "default".to_owned(),
        started_at: rfc3339(0),
    }
}

/// Run `scenario` again under `settings` (runs are deterministic, so this is the same run the
/// caller reported) and write its pod observations to `path` in the recorded trace format.
/// `sink` sees every record, as in `World::run`.
pub(crate) fn export_run(
    scenario: &Scenario,
    settings: RunSettings,
    path: &Path,
    sink: &mut dyn Sink,
) -> Result<u64, ExportError> {
    let header = export_header(scenario, &settings);
    let temporary = path.with_extension("jsonl.tmp");
    let file =
        std::fs::File::create(&temporary).map_err(|e| ExportError::Io(path_error(path, e)))?;
    let mut exporter = Exporter::new(std::io::BufWriter::new(file), &header)
        .map_err(|e| ExportError::Io(path_error(path, e)))?;
    let mut world = World::new(scenario.clone(), settings).map_err(ExportError::World)?;
    let mut touched = Touched {
        inner: sink,
        touched: false,
    };
    world.start_run(&mut touched);
    loop {
        if touched.touched {
            touched.touched = false;
            // The recorded format has no deletion timestamp: a pod being deleted (listed as
            // Terminating for its grace period) has ended its job, so it is written deleted
            // at the deletion, which is when replay must end the job.
            let live = world.kube().pods().filter(|pod| !pod.is_terminating());
            exporter
                .observe(world.now().as_ms(), live)
                .map_err(|e| ExportError::Io(path_error(path, e)))?;
        }
        if !world.step(&mut touched).map_err(ExportError::World)? {
            break;
        }
    }
    let lines = exporter.lines();
    let writer = exporter
        .finish()
        .map_err(|e| ExportError::Io(path_error(path, e)))?;
    let file = writer
        .into_inner()
        .map_err(|e| ExportError::Io(path_error(path, e.into_error())))?;
    file.sync_all()
        .map_err(|e| ExportError::Io(path_error(path, e)))?;
    std::fs::rename(&temporary, path).map_err(|e| ExportError::Io(path_error(path, e)))?;
    Ok(lines)
}

fn path_error(path: &Path, error: std::io::Error) -> String {
    format!("writing {}: {error}", path.display())
}

/// Why an export failed.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ExportError {
    /// Writing the trace failed: the path and the I/O error.
    #[error("{0}")]
    Io(String),
    /// The simulated run itself failed.
    #[error("{0}")]
    World(WorldError),
    /// The second run differed from the first (a harness bug).
    #[error("{0}")]
    Diverged(String),
}

/// A sink that only fingerprints.
struct FingerprintSink(crate::trace::Fingerprint);

impl Sink for FingerprintSink {
    fn record(&mut self, t_ms: u64, node: &str, record: &Record) {
        self.0.add(t_ms, node, record);
    }
}

/// [`export_run`], checking that the exported run has `fingerprint` (the run the caller
/// reported); a mismatch is a determinism bug.
pub(crate) fn export_run_checked(
    scenario: &Scenario,
    settings: RunSettings,
    path: &Path,
    fingerprint: &str,
) -> Result<u64, ExportError> {
    let mut sink = FingerprintSink(crate::trace::Fingerprint::default());
    let lines = export_run(scenario, settings, path, &mut sink)?;
    let exported = sink.0.hex();
    if exported != fingerprint {
        return Err(ExportError::Diverged(format!(
            "the exported run has fingerprint {exported}, the reported run {fingerprint}: \
             a run is not deterministic"
        )));
    }
    Ok(lines)
}
