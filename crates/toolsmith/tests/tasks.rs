//! The tasks extension (`io.modelcontextprotocol/tasks`, SEP-2663) relayed through `serve`:
//! two processes of the conformance fixture (`tests/conformance/upstream.py` with
//! `upstream_tasks.py`, the official Python SDK), each its own upstream, behind two `serve`
//! replicas of one registry. A task made on one replica is followed, answered and cancelled
//! on the other; its id is sealed (another caller's use or a changed id answers as an unknown
//! task) and reaches the upstream that made it; a client without the extension gets a plain
//! result or the upstream's -32021.

mod common;

use std::path::Path;
use std::time::{Duration, Instant};

use common::*;
use serde_json::{Value, json};

const ADA: &str = "ada-secret-0123456789";
const BOB: &str = "bob-secret-0123456789";
const TASKS: &str = "io.modelcontextprotocol/tasks";

fn catalog(dir: &Path, one: u16, two: u16) -> std::path::PathBuf {
    let path = dir.join("tasks.yaml");
    let server = |name: &str, prefix: &str, port: u16| {
        format!(
            "  - name: {name}\n    url: http://127.0.0.1:{port}/mcp\n    {prefix}\n    \
             on_change: accept\n    protocol: \"2026-07-28\"\n    \
             include: [greet, slow_compute, failing_job, confirm_delete]\n    tools:\n      \
             greet: {{danger: safe}}\n      slow_compute: {{danger: safe}}\n      \
             failing_job: {{danger: safe}}\n      confirm_delete: {{danger: safe}}\n"
        )
    };
    let yaml = format!(
        "mcp_servers:\n{}{}",
        server("one", "prefix: \"\"", one),
        server("two", "# named two__<tool>", two)
    );
    std::fs::write(&path, yaml).expect("write catalog");
    path
}

/// Capabilities with the tasks extension, or without.
fn caps(tasks: bool) -> Value {
    let mut caps = json!({"elicitation": {"form": {}}});
    if tasks {
        caps["extensions"] = json!({ TASKS: {} });
    }
    caps
}

fn start(url: &str, token: &str, tool: &str, arguments: Value) -> String {
    let (status, answer) = ask(
        url,
        token,
        "tools/call",
        json!({"name": tool, "arguments": arguments}),
        caps(true),
    );
    assert_eq!(status, 200, "{answer}");
    let result = &answer["result"];
    assert_eq!(result["resultType"], "task", "{answer}");
    assert_eq!(result["status"], "working", "{answer}");
    assert!(result.get("requestState").is_none(), "{answer}");
    let id = result["taskId"].as_str().expect("taskId").to_owned();
    assert!(id.starts_with("tsk1."), "a sealed id: {id}");
    id
}

fn get(url: &str, token: &str, id: &str) -> Value {
    ask(url, token, "tasks/get", json!({"taskId": id}), caps(true)).1
}

/// `tasks/get` until the task's status is `status` (or it ends), within a minute.
fn until(url: &str, id: &str, status: &str) -> Value {
    let started = Instant::now();
    loop {
        let got = get(url, ADA, id);
        let now = got["result"]["status"].as_str().unwrap_or_default();
        if now == status || ["completed", "failed", "cancelled"].contains(&now) {
            return got["result"].clone();
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "task never reached {status}: {got}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
#[ignore = "needs TOOLSMITH_TEST_PYTHON (the official MCP Python SDK of .ci/requirements.txt)"]
fn an_upstreams_task_is_followed_on_any_replica_by_its_caller_only() {
    let python = python();
    let (one, two) = (fixture(&python), fixture(&python));
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("registry.db").display().to_string();
    import_all(&db, &[catalog(dir.path(), one.1, two.1)]);
    let tokens = [
        "--token",
        &format!("ada:call={ADA}"),
        "--token",
        &format!("bob:call={BOB}"),
    ];
    let (_a, rest_a, mcp_a) = serve(&db, dir.path(), &tokens);
    let (_b, _rest_b, mcp_b) = serve(&db, dir.path(), &tokens);
    // Both upstreams' first listings are in on both replicas.
    let started = Instant::now();
    for url in [&mcp_a, &mcp_b] {
        for tool in ["greet", "two__greet"] {
            let greet = json!({"name": tool, "arguments": {"name": "Ada"}});
            while ask(url, ADA, "tools/call", greet.clone(), caps(true)).1["error"].is_object() {
                assert!(
                    started.elapsed() < Duration::from_secs(60),
                    "{tool} was never served ({rest_a})"
                );
                std::thread::sleep(Duration::from_millis(200));
            }
        }
    }

    // toolsmith declares the extension, as its upstreams do.
    let discovered = ask(&mcp_a, ADA, "server/discover", json!({}), caps(true)).1;
    assert!(
        discovered["result"]["capabilities"]["extensions"][TASKS].is_object(),
        "{discovered}"
    );

    // A task made on one replica, followed on the other to its result.
    let id = start(
        &mcp_a,
        ADA,
        "slow_compute",
        json!({"seconds": 1, "label": "x"}),
    );
    let done = until(&mcp_b, &id, "completed");
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(
        done["taskId"],
        id.as_str(),
        "the id the client knows: {done}"
    );
    assert_eq!(
        done["result"]["content"][0]["text"], "computed x in 1.0s",
        "{done}"
    );

    // Another caller, a changed id, an id never given out: an unknown task.
    for (who, bad) in [
        (BOB, id.clone()),
        (ADA, format!("{id}x")),
        (ADA, "tsk1.AAAA".to_owned()),
        (ADA, "not-ours".to_owned()),
    ] {
        let got = get(&mcp_a, who, &bad);
        assert_eq!(got["error"]["code"], -32602, "{who} {bad}: {got}");
    }

    // The second upstream's task asks a question: answered with tasks/update on the other
    // replica, by the upstream's own key; it reached the upstream that made the task.
    let id = start(
        &mcp_b,
        ADA,
        "two__confirm_delete",
        json!({"filename": "f.txt"}),
    );
    let waiting = until(&mcp_a, &id, "input_required");
    assert_eq!(waiting["status"], "input_required", "{waiting}");
    assert_eq!(
        waiting["inputRequests"]["confirm"]["method"], "elicitation/create",
        "{waiting}"
    );
    let answers = json!({"confirm": {"action": "accept", "content": {"confirm": true}}});
    let (status, ack) = ask(
        &mcp_a,
        ADA,
        "tasks/update",
        json!({"taskId": id, "inputResponses": answers}),
        caps(true),
    );
    assert_eq!(
        (status, &ack["result"]),
        (200, &json!({"resultType": "complete"}))
    );
    let done = until(&mcp_b, &id, "completed");
    assert_eq!(
        done["result"]["content"][0]["text"], "deleted f.txt",
        "{done}"
    );

    // A long task cancelled: acked empty, then cancelled.
    let id = start(
        &mcp_a,
        ADA,
        "slow_compute",
        json!({"seconds": 60, "label": "y"}),
    );
    let (_, ack) = ask(
        &mcp_b,
        ADA,
        "tasks/cancel",
        json!({"taskId": id}),
        caps(true),
    );
    assert_eq!(ack["result"], json!({"resultType": "complete"}), "{ack}");
    assert_eq!(until(&mcp_a, &id, "cancelled")["status"], "cancelled");

    // A client without the extension: a plain result from a tool that may run as a task, the
    // upstream's -32021 from one that must, and no task methods.
    let (_, plain) = ask(
        &mcp_a,
        ADA,
        "tools/call",
        json!({"name": "slow_compute", "arguments": {"seconds": 0, "label": "z"}}),
        caps(false),
    );
    assert_eq!(plain["result"]["resultType"], "complete", "{plain}");
    assert_eq!(plain["result"]["content"][0]["text"], "computed z in 0.0s");
    let (status, refused) = ask(
        &mcp_a,
        ADA,
        "tools/call",
        json!({"name": "failing_job", "arguments": {}}),
        caps(false),
    );
    assert_eq!(
        (status, &refused["error"]["code"]),
        (400, &json!(-32021)),
        "{refused}"
    );
    assert!(
        refused["error"]["data"]["requiredCapabilities"]["extensions"][TASKS].is_object(),
        "{refused}"
    );
    let (_, refused) = ask(
        &mcp_a,
        ADA,
        "tasks/get",
        json!({"taskId": done["taskId"]}),
        caps(false),
    );
    assert_eq!(refused["error"]["code"], -32021, "{refused}");

    // The call that made a task is in the run log like any other.
    let runs = request_as(
        "GET",
        &format!("{rest_a}/runs?tool=two__confirm_delete"),
        None,
        Some(ADA),
    )
    .1;
    assert_eq!(runs["runs"].as_array().map(Vec::len), Some(1), "{runs}");
    drop((one, two));
}
