//! The flow's orchestration on an in-memory cluster.

use super::startup::plain_names;

#[test]
fn plain_names_keeps_literal_group_names_and_drops_patterns() {
    let names: Vec<&str> = plain_names(" billing, app-.*,ops.audit_1,,[a-z]+ ,x").collect();
    assert_eq!(names, ["billing", "ops.audit_1", "x"]);
}
