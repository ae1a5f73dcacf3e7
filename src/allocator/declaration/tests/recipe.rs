//! The policy recipe of `docs/review.md` ("Adding your own candidate policy", step 2),
//! compiled: the declaration below is the code block the doc shows (compared with whitespace
//! and trailing commas ignored), so the doc cannot drift from what builds, and it is checked
//! as every shipped policy's declaration is.

use super::{assert_codes_declared_once, assert_intents_name_declared_codes};
use crate::allocator::declaration::code;
use crate::allocator::plugin_core::CORE_CODES;
use crate::allocator::plugin_ping::PING_CODES;
use crate::allocator::{DecisionCode, Declaration, DeclaredCode, Intent, RequestKind};

// The recipe, as docs/review.md shows it.
const MINE_CODES: &[DeclaredCode] = &[
    code(
        DecisionCode::Create,
        RequestKind::CreateAgent,
        "no idle pod fits: create one",
    ),
    code(
        DecisionCode::SkipReuse,
        RequestKind::CreateAgent,
        "an idle pod of the same config takes the job",
    ),
    code(
        DecisionCode::AssignYes,
        RequestKind::ShouldAssignWork,
        "the pod fits the job",
    ),
    code(
        DecisionCode::AssignNo,
        RequestKind::ShouldAssignWork,
        "the pod does not fit; nothing else changes",
    ),
];

pub(super) const MINE: Declaration = Declaration {
    codes: &[MINE_CODES, CORE_CODES, PING_CODES],
    assign_rule: "recorded for every answer",
    intents: &[Intent {
        instead_of: &[DecisionCode::Create],
        code: DecisionCode::SkipReuse,
        reuse: Some(true),
        why: "agent reuse: an idle pod with the same config takes the job",
    }],
};
// End of the recipe.

/// `text` without whitespace and without a comma before a closing bracket (rustfmt's
/// line breaks add both).
fn normalized(text: &str) -> String {
    let mut out: String = text.chars().filter(|c| !c.is_whitespace()).collect();
    for close in [")", "]", "}"] {
        out = out.replace(&format!(",{close}"), close);
    }
    out
}

/// The first ```rust block of `docs/review.md`'s "Adding your own candidate policy".
fn doc_block() -> String {
    let doc = include_str!("../../../../docs/review.md");
    let section = doc
        .split("## Adding your own candidate policy")
        .nth(1)
        .expect("docs/review.md has the recipe section");
    let block = section
        .split("```rust")
        .nth(1)
        .and_then(|rest| rest.split("```").next())
        .expect("the recipe section has a rust block");
    block.to_owned()
}

#[test]
fn the_review_docs_policy_recipe_is_this_declaration_and_a_valid_one() {
    let source = include_str!("recipe.rs");
    let recipe = source
        .split("// The recipe, as docs/review.md shows it.")
        .nth(1)
        .and_then(|rest| rest.split("// End of the recipe.").next())
        .expect("the recipe is marked");
    assert_eq!(normalized(&doc_block()), normalized(recipe));
    assert_codes_declared_once("mine", &MINE);
    assert_intents_name_declared_codes(&MINE);
    assert!(MINE.intent("create", "skip-reuse", true).is_some());
    assert!(MINE.intent("create", "skip-reuse", false).is_none());
    assert_eq!(
        MINE.code("skip-reuse").map(|declared| declared.request),
        Some(RequestKind::CreateAgent)
    );
}
