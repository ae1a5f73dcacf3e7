//! `[leader]` with its modules and configuration timeline, and `[invariants]`.

use super::model::{Invariants, Leader, LeaderConfigChange, LeaderModule, Range};
use super::parse::{Context, show};
use super::reader::{
    Result, Table, boolean, choice_list_of, count_at_least, duration, positive, range, string,
};
use crate::check::InvariantId;
use crate::mutants::Variant;
use std::collections::BTreeMap;

/// The leader runner variants `[leader] variant` accepts (the names of
/// [`crate::mutants::Variant`]).
pub const VARIANTS: &[&str] = &crate::mutants::Variant::NAMES;

/// What `[leader] module_behaviour` accepts: every [`crate::mutants::ModuleBehaviour`], in
/// the order of its `NAMES`.
const MODULE_BEHAVIOUR_ALL: [crate::mutants::ModuleBehaviour; 2] = [
    crate::mutants::ModuleBehaviour::Shipped,
    crate::mutants::ModuleBehaviour::ObeysCtx,
];

/// `[leader] variant` when absent: the fixed design.
const DEFAULT_VARIANT: Variant = Variant::Fixed;

/// `[leader] http2_dead` when absent: apimachinery's HTTP/2 transport declares a connection
/// dead after ReadIdleTimeout (30 s) plus PingTimeout (15 s) without a frame.
pub(crate) const DEFAULT_HTTP2_DEAD_MS: u64 = 45_000;

/// Every invariant id (`docs/invariants.md` describes each): the names of
/// [`InvariantId::ALL`], in its order.
pub const INVARIANT_IDS: [&str; InvariantId::ALL.len()] = invariant_names();

const fn invariant_names() -> [&'static str; InvariantId::ALL.len()] {
    let mut names = [""; InvariantId::ALL.len()];
    let mut index = 0;
    while index < names.len() {
        names[index] = InvariantId::ALL[index].name();
        index += 1;
    }
    names
}

pub(crate) fn leader(top: &Table<'_, '_>, context: &mut Context) -> Result<Option<Leader>> {
    let Some(table) = top.table("leader")? else {
        return Ok(None);
    };
    table.expect_keys(&[
        "replicas",
        "variant",
        "lease_duration",
        "renew_deadline",
        "retry_period",
        "module_stop_latency",
        "module_behaviour",
        "http2_dead",
        "modules",
        "config",
        "lease_crate",
    ])?;
    let replicas = table.or("replicas", 3, &count_at_least(1))?;
    context.leader_replicas = Some(replicas);
    let lease_duration_ms = table.or("lease_duration", 15_000, &duration)?;
    let renew_deadline_ms = table.or("renew_deadline", 10_000, &duration)?;
    let retry_period_ms = table.or("retry_period", 2_000, &duration)?;
    check_timings(
        &table,
        lease_duration_ms,
        renew_deadline_ms,
        retry_period_ms,
    )?;
    let http2_dead_ms = table.or("http2_dead", DEFAULT_HTTP2_DEAD_MS, &duration)?;
    if http2_dead_ms == 0 {
        return Err(table.semantic("http2_dead", "a duration longer than 0s", "\"0s\""));
    }
    let modules = modules(&table)?;
    let config = config(&table, &modules, context)?;
    Ok(Some(Leader {
        replicas,
        variant: table
            .choice_of("variant", &Variant::ALL, Variant::name)?
            .unwrap_or(DEFAULT_VARIANT),
        lease_duration_ms,
        renew_deadline_ms,
        retry_period_ms,
        module_stop_latency: table.or(
            "module_stop_latency",
            Range {
                min_ms: 0,
                max_ms: 2_000,
            },
            &range,
        )?,
        module_behaviour: table
            .choice_of(
                "module_behaviour",
                &MODULE_BEHAVIOUR_ALL,
                crate::mutants::ModuleBehaviour::name,
            )?
            .unwrap_or_default(),
        http2_dead_ms,
        modules,
        config,
        lease_crate: table.choice_of(
            "lease_crate",
            &crate::scenario::LeaseCrate::ALL,
            crate::scenario::LeaseCrate::name,
        )?,
    }))
}

/// client-go's rule: LeaseDuration > RenewDeadline > 1.2 × RetryPeriod, RetryPeriod > 0.
fn check_timings(table: &Table<'_, '_>, lease_ms: u64, renew_ms: u64, retry_ms: u64) -> Result<()> {
    if retry_ms == 0 {
        return Err(table.semantic("retry_period", "a duration longer than 0s", "\"0s\""));
    }
    if lease_ms <= renew_ms {
        let found = format!(
            "lease_duration = {} <= renew_deadline = {}",
            show(lease_ms),
            show(renew_ms)
        );
        return Err(table.semantic("lease_duration", "lease_duration > renew_deadline", &found));
    }
    // RD > 1.2·RP, in integers: 10·RD > 12·RP (u128 so no setting can overflow).
    if u128::from(renew_ms) * 10 <= u128::from(retry_ms) * 12 {
        let found = format!(
            "renew_deadline = {} <= 1.2 × retry_period = 1.2 × {}",
            show(renew_ms),
            show(retry_ms)
        );
        return Err(table.semantic(
            "renew_deadline",
            "renew_deadline > 1.2 × retry_period",
            &found,
        ));
    }
    Ok(())
}

fn modules(leader: &Table<'_, '_>) -> Result<Vec<LeaderModule>> {
    let mut modules: Vec<LeaderModule> = Vec::new();
    for table in leader.tables("modules")? {
        table.expect_keys(&["name", "runnable_when", "work_ctx"])?;
        let name = table.required("name", "the module's name", &string)?;
        if name.is_empty() || modules.iter().any(|module| module.name == name) {
            return Err(table.semantic(
                "name",
                "a unique, non-empty module name",
                &format!("{name:?}"),
            ));
        }
        let runnable_when =
            table.required("runnable_when", "the config flag that enables it", &string)?;
        if runnable_when.is_empty() {
            return Err(table.semantic("runnable_when", "a non-empty config flag name", "\"\""));
        }
        let work_ctx = table
            .choice("work_ctx", &crate::mutants::WorkCtx::NAMES)?
            .and_then(|name| crate::mutants::WorkCtx::from_name(&name))
            .unwrap_or_default();
        modules.push(LeaderModule {
            name,
            runnable_when,
            work_ctx,
        });
    }
    Ok(modules)
}

fn config(
    leader: &Table<'_, '_>,
    modules: &[LeaderModule],
    context: &mut Context,
) -> Result<Vec<LeaderConfigChange>> {
    let mut changes = Vec::new();
    for table in leader.tables("config")? {
        table.expect_keys(&["at", "set"])?;
        let at_ms = table.required("at", "when the configuration changes", &duration)?;
        let Some(value) = table.get("set") else {
            return Err(table.missing("set", "a table of flags, e.g. { gitops = true }"));
        };
        let flags = table.nested("set", value, table.key_path("set"))?;
        let mut set = BTreeMap::new();
        for (name, _) in flags.table.iter() {
            let name = name.get_ref().to_string();
            let flag = flags.required(&name, "true or false", &boolean)?;
            if !modules.iter().any(|module| module.runnable_when == name) {
                let message = format!("no [[leader.modules]] entry has runnable_when = {name:?}");
                context.warnings.push(flags.warning(&name, &message));
            }
            set.insert(name, flag);
        }
        changes.push(LeaderConfigChange { at_ms, set });
    }
    Ok(changes)
}

pub(crate) fn invariants(top: &Table<'_, '_>, context: &mut Context) -> Result<Invariants> {
    let defaults = Invariants::default();
    let Some(table) = top.table("invariants")? else {
        return Ok(defaults);
    };
    table.expect_keys(&[
        "max_job_wait",
        "plugin_requests_per_job_max",
        "disable",
        "require",
    ])?;
    let ids = |key: &str| choice_list_of(&table, key, &InvariantId::ALL, InvariantId::name);
    let require = ids("require")?.unwrap_or_default();
    for id in &require {
        if !id.is_sometimes() {
            let message = format!("\"{id}\" is not a `sometimes` invariant; it is checked anyway");
            context.warnings.push(table.warning("require", &message));
        }
    }
    Ok(Invariants {
        max_job_wait_ms: table.or("max_job_wait", defaults.max_job_wait_ms, &duration)?,
        plugin_requests_per_job_max: table.or(
            "plugin_requests_per_job_max",
            defaults.plugin_requests_per_job_max,
            &positive,
        )?,
        disable: ids("disable")?.unwrap_or_default(),
        require,
    })
}
