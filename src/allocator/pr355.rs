//! Policy `pr355` (skeleton; filled in by the allocator work).

use super::*;
use crate::resources::KubeResult;

pub(crate) struct Pr355 {
    process_id: u64,
}

impl Pr355 {
    pub(crate) fn new(process_id: u64) -> Self {
        Pr355 { process_id }
    }
}

impl Allocator for Pr355 {
    fn policy(&self) -> Policy {
        let _ = self.process_id;
        Policy::Pr355
    }

    fn handle_request(&mut self, _: u64, _: RequestId, _: PluginRequest, _: &mut dyn ServerApi, _: &mut Outbox) {
        unimplemented!()
    }

    fn handle_kube(&mut self, _: u64, _: CallId, _: KubeResult, _: &mut dyn ServerApi, _: &mut Outbox) {
        unimplemented!()
    }

    fn should_assign_work(&mut self, _: u64, _: &ShouldAssignWorkRequest, _: &mut dyn ServerApi, _: &mut Outbox) -> bool {
        unimplemented!()
    }
}
