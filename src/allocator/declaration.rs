//! What a policy declares about its own decisions: the codes it records, which request each
//! answers, and which differences from another policy it makes on purpose.
//!
//! A reviewer reads these next to the policy's code; `elasticsim review` reads them to align
//! two runs' decisions by request and to mark the divergences a candidate policy intends
//! (`create` → `skip-reuse` with reuse on) apart from the ones nobody asked for. Nothing here
//! changes a decision: it only names them.

use super::decision_code::DecisionCode;

/// The server→plugin request a decision answers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum RequestKind {
    /// create-agent: create a pod, reuse one, or decline.
    CreateAgent,
    /// should-assign-work: may this agent take this job?
    ShouldAssignWork,
    /// job-completion: what happens to the agent whose job finished.
    JobCompletion,
    /// server-ping: the periodic clean-up of pods and agents.
    ServerPing,
    /// A step inside a request (queued behind a lock, a failed call) rather than its answer;
    /// not aligned on its own.
    Step,
}

impl RequestKind {
    /// The request's name as the extension protocol spells it.
    pub(crate) fn name(self) -> &'static str {
        match self {
            RequestKind::CreateAgent => "create-agent",
            RequestKind::ShouldAssignWork => "should-assign-work",
            RequestKind::JobCompletion => "job-completion",
            RequestKind::ServerPing => "server-ping",
            RequestKind::Step => "step",
        }
    }
}

/// One decision code a policy records, the request it answers and what it means.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DeclaredCode {
    /// The code the policy records.
    pub code: DecisionCode,
    /// The request during which the policy records it.
    pub request: RequestKind,
    /// What the code means in this policy, in one sentence.
    pub meaning: &'static str,
}

/// A difference from another policy that this policy makes on purpose: where the other
/// decides one of `instead_of`, this one decides `code`, because `why`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Intent {
    /// The codes the other policy decides in the same situation.
    pub instead_of: &'static [DecisionCode],
    /// The code this policy decides there instead.
    pub code: DecisionCode,
    /// `Some(true)`: only with `enable_agent_reuse` on; `Some(false)`: only with it off;
    /// `None`: always.
    pub reuse: Option<bool>,
    /// Why the difference is intended, in one sentence.
    pub why: &'static str,
}

/// Everything a policy declares about its decisions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Declaration {
    /// The codes it records, in groups (its own, then those of shared code it runs).
    pub codes: &'static [&'static [DeclaredCode]],
    /// How it answers should-assign-work when it records no decision for the answer.
    pub assign_rule: &'static str,
    /// Its intended differences from the plugin's master branch.
    pub intents: &'static [Intent],
}

impl Declaration {
    /// The declaration of `code`, if the policy declares it.
    pub(crate) fn code(&self, code: &str) -> Option<&'static DeclaredCode> {
        let code = DecisionCode::parse(code)?;
        self.codes
            .iter()
            .flat_map(|group| group.iter())
            .find(|declared| declared.code == code)
    }

    /// The intent that explains deciding `code` where another policy decided `other`, with
    /// reuse on or off; `None` if the difference is not intended.
    pub(crate) fn intent(&self, other: &str, code: &str, reuse: bool) -> Option<&'static Intent> {
        self.intents.iter().find(|intent| {
            intent.code.as_str() == code
                && intent
                    .instead_of
                    .iter()
                    .any(|instead| instead.as_str() == other)
                && intent.reuse.is_none_or(|wanted| wanted == reuse)
        })
    }
}

/// A shorthand for the declaration tables.
pub(super) const fn code(
    code: DecisionCode,
    request: RequestKind,
    meaning: &'static str,
) -> DeclaredCode {
    DeclaredCode {
        code,
        request,
        meaning,
    }
}

#[cfg(test)]
mod tests {
    use super::Declaration;
    use crate::allocator::{DecisionCode, Policy};

    mod recipe;

    /// Every code `declaration` records is declared once.
    fn assert_codes_declared_once(name: &str, declaration: &Declaration) {
        let mut codes: Vec<DecisionCode> = declaration
            .codes
            .iter()
            .flat_map(|group| group.iter().map(|declared| declared.code))
            .collect();
        let count = codes.len();
        codes.sort_unstable();
        codes.dedup();
        assert_eq!(codes.len(), count, "{name} declares a code twice");
    }

    /// Every intent of `declaration` names a code it declares.
    fn assert_intents_name_declared_codes(declaration: &Declaration) {
        for intent in declaration.intents {
            assert!(
                declaration.code(intent.code.as_str()).is_some(),
                "{intent:?}"
            );
        }
    }

    #[test]
    fn every_policy_declares_each_code_once() {
        for policy in Policy::ALL {
            assert_codes_declared_once(policy.name(), policy.declaration());
        }
    }

    #[test]
    fn an_intent_names_declared_codes_and_holds_only_where_it_says() {
        for policy in Policy::ALL {
            assert_intents_name_declared_codes(policy.declaration());
        }
        let pr355 = Policy::Pr355.declaration();
        assert!(pr355.intent("create", "skip-reuse", true).is_some());
        assert!(pr355.intent("create", "skip-reuse", false).is_none());
        assert!(pr355.intent("assign-no", "evict", false).is_none());
        assert!(Policy::Upstream.declaration().intents.is_empty());
    }
}
