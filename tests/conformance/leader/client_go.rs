//! client-go's leader-election tests, ported to the model's elector as a candidate replica
//! named "baz" sees them.
//!
//! Origin: kubernetes/client-go, `tools/leaderelection/leaderelection_test.go`,
//! `TestTryAcquireOrRenewLeases` (the `testTryAcquireOrRenew` table), `TestReleaseLeaseLeases`
//! and `TestReleaseOnCancellation_Leases`, at v0.24.3 (the version agentk built on) and at HEAD
//! (the case "acquire from led object with the lease duration seconds", added with
//! k/k#114872 in v0.27). The poll timing case comes from apimachinery v0.24.3
//! `pkg/util/wait/wait.go` (`PollImmediateUntil` -> `poller`).
//!
//! Where client-go seeds `observedRecord`/`observedTime` directly, the port reaches the same
//! state through the API: an earlier read of the same record (observed "in the past" is a read
//! one lease duration ago whose bytes did not change since). Every case runs against both
//! variants: `agentk-v1` (client-go v0.24.3) must show the real outcome, `fixed` the one its
//! documentation promises.

use super::driver::{Driver, ME, Server, accepted, flags, lease, settings, verb, written};
use elasticsim::leader::{KubeCall, Observation, Variant};
use elasticsim::resources::{KubeError, KubeRequest, KubeResult};

/// client-go's test elector: LeaseDuration 10 s (RD 5 s and RP 2 s satisfy the validation).
const TIMINGS: [u64; 3] = [10_000, 5_000, 2_000];

fn candidate(variant: Variant) -> Driver {
    Driver::start(
        settings(variant, TIMINGS, &["gitops"]),
        flags(&["gitops"], &[]),
        7,
    )
}

fn held(driver: &Driver) -> usize {
    driver
        .observations
        .iter()
        .filter(|(_, o)| matches!(o, Observation::LeaseHeld { .. }))
        .count()
}

/// Answer every Get with `record` until the candidate writes; the write and when it came.
fn first_write(driver: &mut Driver, record: &KubeResult, until_ms: u64) -> Option<(u64, KubeCall)> {
    while let Some(call) = driver.next_call(until_ms) {
        if verb(&call) != "get-lease" {
            return Some((driver.now_ms, call));
        }
        driver.answer(record.clone());
    }
    None
}

#[test]
fn try_acquire_or_renew_acquires_from_no_object() {
    for variant in Variant::ALL {
        let mut driver = candidate(variant);
        let get = driver.answer(Err(KubeError::NotFound));
        assert_eq!(verb(&get), "get-lease");
        let create = driver.next_call(0).expect("a create follows the 404");
        assert_eq!(verb(&create), "create-lease", "{variant:?}");
        let spec = written(&create).expect("a create carries a spec");
        assert_eq!(
            (spec.holder_identity.as_str(), spec.lease_transitions),
            (ME, 0)
        );
        driver.answer(accepted(&create, 1));
        assert_eq!(
            held(&driver),
            1,
            "{variant:?}: two API interactions acquire"
        );
    }
}

#[test]
fn try_acquire_or_renew_acquires_from_an_unled_object() {
    for variant in Variant::ALL {
        let mut driver = candidate(variant);
        driver.answer(lease("", 0, 0, 5));
        let update = driver.next_call(0).expect("an update follows at once");
        let KubeRequest::UpdateLease {
            spec,
            resource_version,
            ..
        } = &update.request
        else {
            panic!("{variant:?}: expected an update, got {update:?}");
        };
        assert_eq!(*resource_version, 5, "{variant:?}: CAS on the version read");
        assert_eq!(
            (spec.holder_identity.as_str(), spec.lease_transitions),
            (ME, 1)
        );
        driver.answer(accepted(&update, 6));
        assert_eq!(held(&driver), 1, "{variant:?}");
    }
}

#[test]
fn try_acquire_or_renew_acquires_from_an_empty_holder_object_at_once() {
    // client-go: "acquire from empty led, acked object" (observedTime in the future).
    for variant in Variant::ALL {
        let mut driver = candidate(variant);
        driver.answer(lease("", 15, 3, 9));
        let update = driver
            .next_call(0)
            .expect("no waiting for a released Lease");
        assert_eq!(driver.now_ms, 0, "{variant:?}");
        let spec = written(&update).expect("an update");
        assert_eq!(
            (spec.holder_identity.as_str(), spec.lease_transitions),
            (ME, 4)
        );
    }
}

#[test]
fn try_acquire_or_renew_does_not_acquire_from_a_led_acked_object() {
    for variant in Variant::ALL {
        let mut driver = candidate(variant);
        driver.answer(lease("bing", 10, 0, 5));
        let next = driver
            .next_call(60_000)
            .expect("the candidate keeps trying");
        assert_eq!(
            verb(&next),
            "get-lease",
            "{variant:?}: no write to a held Lease"
        );
        // JitterUntil(RP, 1.2): the next try comes RP·[1, 2.2) after the last one returned.
        assert!(
            (2_000..4_400).contains(&driver.now_ms),
            "{variant:?} at {}",
            driver.now_ms
        );
        assert_eq!(held(&driver), 0, "{variant:?}");
    }
}

#[test]
fn try_acquire_or_renew_acquires_from_a_led_unacked_object_whose_bytes_do_not_change() {
    for variant in Variant::ALL {
        let mut driver = candidate(variant);
        let record = lease("bing", 10, 0, 5);
        let (at_ms, update) = first_write(&mut driver, &record, 60_000).expect("a takeover");
        assert!(
            (10_000..10_000 + 4_400).contains(&at_ms),
            "{variant:?}: the takeover waits one lease duration from the first read, at {at_ms}"
        );
        let spec = written(&update).expect("an update");
        assert_eq!(
            (spec.holder_identity.as_str(), spec.lease_transitions),
            (ME, 1)
        );
        driver.answer(accepted(&update, 6));
        assert_eq!(held(&driver), 1, "{variant:?}");
    }
}

#[test]
fn try_acquire_or_renew_renews_an_already_acquired_object() {
    for variant in Variant::ALL {
        let mut driver = candidate(variant);
        let mut server = Server::default();
        driver.acquire(&mut server);
        assert_eq!(held(&driver), 1, "{variant:?}: acquired");
        let renew_get = driver.next_call(0).expect("the renew loop reads at once");
        assert_eq!(verb(&renew_get), "get-lease");
        driver.answer(lease(ME, 10, 0, 1));
        let update = driver.next_call(2_000).expect("and writes");
        let spec = written(&update).expect("an update").clone();
        assert_eq!(
            (spec.holder_identity.as_str(), spec.lease_transitions),
            (ME, 0),
            "{variant:?}: a renewal is no transition"
        );
        driver.answer(accepted(&update, 2));
        assert_eq!(held(&driver), 2, "{variant:?}");
    }
}

#[test]
fn the_takeover_waits_for_the_configured_duration_in_v0_24_and_the_records_from_v0_27() {
    // HEAD: "acquire from led object with the lease duration seconds" (record LDs 3 s,
    // configured 10 s, success after retryAfter 3 s); v0.24.3 still used its own LD.
    let record = lease("bing", 3, 0, 5);
    let mut v1 = candidate(Variant::AgentkV1);
    let (v1_ms, _) = first_write(&mut v1, &record, 60_000).expect("agentk-v1 takes over");
    assert!(
        v1_ms >= 10_000,
        "v0.24.3 waits its configured 10 s, wrote at {v1_ms}"
    );
    let mut fixed = candidate(Variant::Fixed);
    let (fixed_ms, _) = first_write(&mut fixed, &record, 60_000).expect("fixed takes over");
    assert!(
        (3_000..10_000).contains(&fixed_ms),
        "fixed follows the record's 3 s (v0.27+), wrote at {fixed_ms}"
    );
}

/// The acquired replica's configuration turns its only module off: agentk cancels the
/// elector's ctx (its release path), as the client-go test cancels `Run`'s ctx.
fn cancel(driver: &mut Driver) {
    // The elector's ctx is cancelled when the last module stops being runnable in the
    // designs that elect on demand (agentk-v1, fixed); v2 and later cancel it only on
    // shutdown, after the module stage stopped.
    if driver
        .replica()
        .settings()
        .variant
        .promises_election_iff_demand()
    {
        let version = 2;
        let flags = flags(&[], &["gitops"]);
        driver.input(elasticsim::leader::Input::Config { version, flags });
    } else {
        driver.input(elasticsim::leader::Input::Shutdown);
    }
}

/// The release write of a run: holder "" and LDs 1.
fn is_release(call: &KubeCall) -> bool {
    written(call).is_some_and(|spec| spec.holder_identity.is_empty())
}

#[test]
fn release_lease_writes_an_empty_holder_after_acquiring_from_no_object() {
    // testReleaseLease, "release acquired lock from no object": get 404, create, update.
    // The original cancels the elector at once; agentk-v2 and agentk-head cancel it only
    // after the module stage stopped (shutdown), so one more renewal may land first and the
    // exact write list does not hold for them: only the on-demand designs run it.
    let on_demand = Variant::ALL.into_iter();
    for variant in on_demand.filter(|variant| variant.promises_election_iff_demand()) {
        let mut driver = candidate(variant);
        let mut server = Server::default();
        driver.acquire(&mut server);
        cancel(&mut driver);
        driver.serve(&mut server, 1_000);
        let writes = driver
            .calls
            .iter()
            .filter(|(_, call)| written(call).is_some())
            .map(|(_, call)| verb(call))
            .collect::<Vec<_>>();
        assert_eq!(writes, ["create-lease", "update-lease"], "{variant:?}");
        let release = &driver.calls.last().expect("calls were made").1;
        assert!(is_release(release), "{variant:?}: the last call releases");
        let spec = written(release).expect("a write");
        assert_eq!(
            (spec.lease_duration_seconds, spec.lease_transitions),
            (1, 0)
        );
        let stored = server.lease.expect("the Lease exists");
        assert_eq!(
            stored.spec.holder_identity, "",
            "{variant:?}: outHolder \"\""
        );
        assert!(
            !driver.replica().election_running(),
            "{variant:?}: Run returned"
        );
    }
}

/// Cancel while the renew loop's `stage` ("get-lease" or "update-lease") is in flight, then
/// fail that request as a cancelled ctx does.
fn release_on_cancellation(variant: Variant, stage: &str) -> Driver {
    // testReleaseOnCancellation: LD 15 s, RD 2 s, RP 1 s, ReleaseOnCancel.
    let settings = settings(variant, [15_000, 2_000, 1_000], &["gitops"]);
    let mut driver = Driver::start(settings, flags(&["gitops"], &[]), 3);
    let mut server = Server::default();
    while let Some(call) = driver.next_call(10_000) {
        let renewing = held(&driver) > 0;
        if renewing && verb(&call) == stage {
            break;
        }
        let result = server.apply(driver.now_ms, &call);
        driver.answer(result);
    }
    cancel(&mut driver);
    driver.answer(Err(KubeError::Timeout));
    driver.serve(&mut server, 20_000);
    assert_eq!(
        server.holder(),
        Some(""),
        "{variant:?}: the lock is released on cancellation of the {stage}"
    );
    driver
}

/// The variants configured as the original test is (`ReleaseOnCancel: true`): all but
/// `agentk-head-no-release`, which is that configuration without it.
fn releasing_on_cancel() -> impl Iterator<Item = Variant> {
    Variant::ALL
        .into_iter()
        .filter(|variant| *variant != Variant::AgentkHeadNoRelease)
}

#[test]
fn without_release_on_cancel_the_cancelled_leader_keeps_the_lease_until_it_expires() {
    // testReleaseOnCancellation with `ReleaseOnCancel: false`: the run returns and reports
    // stopped leading, but writes nothing: the Lease still names the old leader.
    let settings = settings(
        Variant::AgentkHeadNoRelease,
        [15_000, 2_000, 1_000],
        &["gitops"],
    );
    let mut driver = Driver::start(settings, flags(&["gitops"], &[]), 3);
    let mut server = Server::default();
    while let Some(call) = driver.next_call(10_000) {
        if held(&driver) > 0 && verb(&call) == "get-lease" {
            break;
        }
        let result = server.apply(driver.now_ms, &call);
        driver.answer(result);
    }
    cancel(&mut driver);
    driver.answer(Err(KubeError::Timeout));
    driver.serve(&mut server, 20_000);
    assert_ne!(server.holder(), Some(""), "no release write");
    assert!(server.holder().is_some_and(|holder| !holder.is_empty()));
    assert!(!driver.replica().election_running(), "Run returned");
}

#[test]
fn release_on_cancellation_releases_the_lease_and_reports_became_and_stopped_leading() {
    for variant in releasing_on_cancel() {
        for stage in ["get-lease", "update-lease"] {
            let driver = release_on_cancellation(variant, stage);
            let events = driver
                .observations
                .iter()
                .filter_map(|(_, o)| match o {
                    Observation::LeadingStarted { .. } => Some("became leader"),
                    Observation::LeadingStopped { .. } => Some("stopped leading"),
                    _ => None,
                })
                .collect::<Vec<_>>();
            assert_eq!(
                events,
                ["became leader", "stopped leading"],
                "{variant:?} {stage}"
            );
            assert!(!driver.replica().election_running(), "{variant:?} {stage}");
        }
    }
}

/// Renew attempts of the first renew cycle, each failing after a 2.5 s round trip.
fn renew_attempt_starts(variant: Variant) -> Vec<u64> {
    let settings = settings(variant, [15_000, 10_000, 2_000], &["gitops"]);
    let mut driver = Driver::start(settings, flags(&["gitops"], &[]), 5);
    let mut server = Server::default();
    driver.acquire(&mut server);
    let mut starts = Vec::new();
    while let Some(call) = driver.next_call(10_000) {
        starts.push(driver.now_ms);
        let at_ms = driver.now_ms + 2_500;
        driver.answer_at(at_ms, call.call, Err(KubeError::ServerError));
    }
    starts.retain(|&t_ms| t_ms < 10_000);
    starts
}

#[test]
fn v0_24_3_polls_from_the_end_of_the_immediate_attempt_and_drops_ticks_during_attempts() {
    assert_eq!(renew_attempt_starts(Variant::AgentkV1), [0, 4_500, 8_500]);
    // fixed polls as newer apimachinery: ticks from the cycle start, a missed tick kept.
    assert_eq!(
        renew_attempt_starts(Variant::Fixed),
        [0, 2_500, 5_000, 7_500]
    );
}
