//! Discovery figures: how long the hunt needs to kill a target (a defective policy or
//! variant, or one ablation) on the generic scenarios alone, uniform against guided, as the
//! median over master seeds; and the kill rate (targets killed within the budget / targets).

use crate::figures::Bench;
use crate::stats::Figure;
use elasticsim::ablation::{Ablation, Ablations};
use elasticsim::allocator::Policy;
use elasticsim::explore::hunt::{Limits, Mode, Target, hunt};
use elasticsim::leader::Variant;
use elasticsim::scenario::Scenario;
use elasticsim::world::RunSettings;
use std::time::Instant;

/// What a target runs: a policy on the elastic files, or a variant on the leader files.
#[derive(Clone, Copy)]
enum Who {
    Policy(Policy),
    Variant(Variant),
}

/// (target, policy or variant, ablation): a few targets the default hunt kills, one per side
/// and kind, so the figures fit the bench's time.
const TARGETS: [(&str, Who, Option<Ablation>); 4] = [
    ("pr355", Who::Policy(Policy::Pr355), None),
    ("agentk-v1", Who::Variant(Variant::AgentkV1), None),
    (
        "safe-limits",
        Who::Policy(Policy::Safe),
        Some(Ablation::Limits),
    ),
    (
        "fixed-re-enter",
        Who::Variant(Variant::Fixed),
        Some(Ablation::ReEnter),
    ),
];

fn target(
    name: &str,
    who: Who,
    ablation: Option<Ablation>,
    files: &[Scenario],
) -> anyhow::Result<Target> {
    let leader_side = matches!(who, Who::Variant(_));
    let ablations = Ablations::of(ablation);
    let scenarios: Vec<Scenario> = files
        .iter()
        .filter(|scenario| scenario.leader.is_some() == leader_side)
        .map(|scenario| Scenario {
            ablations: ablations.clone(),
            ..scenario.clone()
        })
        .collect();
    let first = scenarios
        .first()
        .ok_or_else(|| anyhow::anyhow!("no scenario for {name}"))?;
    let mut settings = RunSettings::from_scenario(first);
    match who {
        Who::Policy(policy) => settings.policy = policy,
        Who::Variant(variant) => settings.variant = Some(variant),
    }
    Ok(Target {
        name: name.to_owned(),
        scenarios,
        settings,
    })
}

impl Bench {
    /// Per target and mode: median seconds to kill over the master seeds (kills only), and
    /// the kill rate over targets and master seeds.
    pub fn discovery(&mut self) -> anyhow::Result<()> {
        let folder = self.scenarios.join("explore");
        let mut files = Vec::new();
        for name in ["elastic.toml", "leader.toml"] {
            let Some(scenario) = crate::model::load_if_present(&folder.join(name))? else {
                let why = format!("{} does not exist", folder.join(name).display());
                self.push(Figure::missing(
                    "hunt_kill_rate_uniform",
                    "ratio",
                    None,
                    &why,
                ));
                return Ok(());
            };
            files.push(scenario);
        }
        let (masters, budget_s) = if self.plan.quick { (3, 2.0) } else { (5, 4.0) };
        for mode in [Mode::Uniform, Mode::Guided] {
            let mut killed = 0usize;
            let mut hunts = 0usize;
            for (name, who, ablation) in TARGETS {
                let target = target(name, who, ablation, &files)?;
                let mut walls = Vec::new();
                for master in 1..=masters {
                    let started = Instant::now();
                    let elapsed = || started.elapsed().as_secs_f64();
                    let limits = Limits {
                        budget_s,
                        master_seed: master,
                        elapsed: &elapsed,
                        progress: &|_| {},
                        stop: &|| false,
                    };
                    let result = hunt(&target, mode, &limits)?;
                    hunts += 1;
                    if let Some(find) = result.find {
                        killed += 1;
                        walls.push(find.wall_s);
                    }
                }
                let figure = format!("hunt_s_to_kill_{}_{}", mode.name(), name.replace('-', "_"));
                let note = format!(
                    "{} of {masters} master seeds killed within {budget_s:.0}s",
                    walls.len()
                );
                self.push(Figure::measured(&figure, "s", &walls, None).with_note(note));
            }
            let rate = killed as f64 / hunts.max(1) as f64;
            let name = format!("hunt_kill_rate_{}", mode.name());
            let note = format!("{killed} of {hunts} (target, master seed) hunts killed");
            self.push(Figure::measured(&name, "ratio", &[rate], None).with_note(note));
        }
        Ok(())
    }
}
