//! A 2026-07-28 upstream's "input required" relayed through `serve` to a 2026-07-28 client
//! (SEP-2322): the conformance fixture (`tests/conformance/upstream.py`, the official Python
//! SDK) behind two `serve` replicas of one registry, each round of a call sent to the other
//! replica; the sealed state refused when changed, another caller's or another tool's; a
//! dangerous tool's confirmation carried in the state; a prompt's "input required"; an
//! upstream's -32021 passed on as that error; and a FastMCP (PyPI) guard tool's question
//! (`tests/upstream/fastmcp_guard.py`) asked and answered through `serve` the same way;
//! `x-mcp-header` arguments checked at the door; and a 2025-11-25 session taken up by
//! another replica, asked during its calls, its call's stream resumed with `Last-Event-ID`.

mod common;

use std::path::Path;
use std::time::{Duration, Instant};

use common::*;
use serde_json::{Value, json};

const ADA: &str = "ada-secret-0123456789";
const BOB: &str = "bob-secret-0123456789";

fn caps() -> Value {
    json!({"elicitation": {"form": {}}, "sampling": {}, "roots": {}})
}

fn accept(content: Value) -> Value {
    json!({"action": "accept", "content": content})
}

/// A tool call's round with `answers` and `state`.
fn call(url: &str, token: &str, tool: &str, answers: Value, state: Option<&str>) -> Value {
    let mut params = json!({"name": tool, "arguments": {}});
    if !answers.is_null() {
        params["inputResponses"] = answers;
    }
    if let Some(s) = state {
        params["requestState"] = json!(s);
    }
    ask(url, token, "tools/call", params, caps()).1
}

fn asked(answer: &Value) -> (Vec<String>, String) {
    let result = &answer["result"];
    assert_eq!(result["resultType"], "input_required", "{answer}");
    let keys = result["inputRequests"]
        .as_object()
        .map(|m| m.keys().cloned().collect())
        .unwrap_or_default();
    let state = result["requestState"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    (keys, state)
}

fn text(answer: &Value) -> String {
    answer["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

fn catalog(dir: &Path, port: u16) -> std::path::PathBuf {
    let path = dir.join("relay.yaml");
    let yaml = format!(
        "mcp_servers:\n  - name: fixture\n    url: http://127.0.0.1:{port}/mcp\n    prefix: \"\"\n    \
         on_change: accept\n    protocol: \"2026-07-28\"\n    include: [\"test_input_required_*\", test_missing_capability, test_custom_header]\n    \
         tools:\n      test_custom_header: {{danger: safe}}\n      test_input_required_result_multi_round: {{danger: safe}}\n      \
         test_missing_capability: {{danger: safe}}\n      test_input_required_result_request_state: {{danger: safe}}\n      \
         test_input_required_result_capabilities: {{danger: safe}}\n  \
         - name: legacy\n    url: http://127.0.0.1:{port}/mcp\n    protocol: \"2025-11-25\"\n    on_change: accept\n    \
         include: [test_sampling]\n    tools:\n      test_sampling: {{danger: safe}}\n\
         toolsets:\n  - name: statics\n    include: {{servers: [fixture], resources: [\"test://static-*\"], prompts: [\"test_simple_*\"]}}\n"
    );
    std::fs::write(&path, yaml).expect("write catalog");
    path
}

#[test]
#[ignore = "needs TOOLSMITH_TEST_PYTHON (the official MCP Python SDK of .ci/requirements.txt)"]
fn input_required_is_relayed_across_replicas_and_its_state_holds() {
    let python = python();
    let up = fixture(&python);
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("registry.db").display().to_string();
    import_all(&db, &[catalog(dir.path(), up.1)]);
    let tokens = [
        "--token",
        &format!("ada:call={ADA}"),
        "--token",
        &format!("bob:call={BOB}"),
    ];
    let (_a, rest_a, mcp_a) = serve(&db, dir.path(), &tokens);
    let (_b, _rest_b, mcp_b) = serve(&db, dir.path(), &tokens);
    // The upstream's first listing is in on both replicas.
    let started = Instant::now();
    while call(
        &mcp_b,
        ADA,
        "test_input_required_result_multi_round",
        Value::Null,
        None,
    )["error"]
        .is_object()
    {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "the fixture's tools were never served ({rest_a})"
        );
        std::thread::sleep(Duration::from_millis(200));
    }

    // Three rounds, each on the other replica: the upstream's questions as it asked them.
    let tool = "test_input_required_result_multi_round";
    let (keys, state1) = asked(&call(&mcp_a, ADA, tool, Value::Null, None));
    assert_eq!(keys, ["step1"]);
    assert!(state1.starts_with("tsr1."), "{state1}");
    // The upstream's own state travels sealed: nothing of it readable.
    assert!(
        !state1.contains("round") && !state1.contains('{'),
        "{state1}"
    );
    let step1 = json!({"step1": accept(json!({"name": "Ada"}))});
    let (keys, state2) = asked(&call(&mcp_b, ADA, tool, step1.clone(), Some(&state1)));
    assert_eq!(keys, ["step2"]);
    assert_ne!(state1, state2);

    // A changed state, another caller's use of it, or its use for another tool: refused
    // before anything runs.
    let step2 = json!({"step2": accept(json!({"color": "blue"}))});
    let tampered = format!("{state2}x");
    for (who, tool_name, state) in [
        (ADA, tool, tampered.as_str()),
        (BOB, tool, state2.as_str()),
        (
            ADA,
            "test_input_required_result_request_state",
            state2.as_str(),
        ),
        (ADA, tool, "tsr1.AAAA"),
    ] {
        let answer = call(&mcp_a, who, tool_name, step2.clone(), Some(state));
        assert_eq!(
            answer["error"]["code"], -32602,
            "{who} {tool_name}: {answer}"
        );
        assert!(
            answer["error"]["message"]
                .as_str()
                .is_some_and(|m| m.contains("requestState")),
            "{answer}"
        );
    }
    let done = call(&mcp_a, ADA, tool, step2, Some(&state2));
    assert_eq!(
        text(&done),
        "Multi-round complete for Ada who likes blue",
        "{done}"
    );

    // A dangerous tool: toolsmith's confirmation first, then the upstream's question; the
    // confirmation rides the sealed state, so the last round does not ask it again.
    let dangerous = "test_input_required_result_elicitation";
    let (keys, _) = asked(&call(&mcp_a, ADA, dangerous, Value::Null, None));
    assert_eq!(keys, ["toolsmith_confirm"]);
    let confirm = json!({"toolsmith_confirm": accept(json!({"confirm": true}))});
    let (keys, state) = asked(&call(&mcp_b, ADA, dangerous, confirm, None));
    assert_eq!(keys, ["user_name"]);
    let named = json!({"user_name": accept(json!({"name": "Grace"}))});
    let done = call(&mcp_a, ADA, dangerous, named, Some(&state));
    assert_eq!(text(&done), "Hello, Grace!", "{done}");

    // The upstream asks only what the client declared it can answer: toolsmith declares the
    // client's capabilities upstream, not its own.
    let only_sampling = ask(
        &mcp_a,
        ADA,
        "tools/call",
        json!({"name": "test_input_required_result_capabilities", "arguments": {}}),
        json!({"sampling": {}}),
    )
    .1;
    assert_eq!(asked(&only_sampling).0, ["sample_input"]);

    // A prompt's "input required", relayed the same way.
    let prompt = json!({"name": "test_input_required_result_prompt"});
    let (_, first) = ask(&mcp_a, ADA, "prompts/get", prompt.clone(), caps());
    let (keys, state) = asked(&first);
    assert_eq!(keys, ["user_context"]);
    let mut again = prompt;
    again["inputResponses"] = json!({"user_context": accept(json!({"context": "tests"}))});
    again["requestState"] = json!(state);
    let (_, got) = ask(&mcp_b, ADA, "prompts/get", again, caps());
    assert_eq!(
        got["result"]["messages"][0]["content"]["text"], "Prompt with context: tests",
        "{got}"
    );

    // An upstream on the older protocol asks for a sample during the call: the call is parked
    // and the request reaches the 2026-07-28 client as "input required"; its answer (sent to
    // the replica that asked) finishes the call.
    let sampling = "legacy__test_sampling";
    let started = Instant::now();
    while request_as(
        "GET",
        &format!("{rest_a}/tools/{sampling}"),
        None,
        Some(ADA),
    )
    .0 != 200
    {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "{sampling} was never served"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    let mut params = json!({"name": sampling, "arguments": {"prompt": "Say hi"}});
    let first = ask(&mcp_a, ADA, "tools/call", params.clone(), caps()).1;
    let (keys, state) = asked(&first);
    assert_eq!(keys, ["upstream_question"]);
    assert_eq!(
        first["result"]["inputRequests"]["upstream_question"]["method"], "sampling/createMessage",
        "{first}"
    );
    params["inputResponses"] = json!({"upstream_question": {
        "role": "assistant", "content": {"type": "text", "text": "hi there"}, "model": "m"}});
    params["requestState"] = json!(state);
    let done = ask(&mcp_a, ADA, "tools/call", params, caps()).1;
    assert_eq!(text(&done), "LLM response: hi there", "{done}");

    // A toolset picking resources by URI glob and prompts by name: its endpoint lists and
    // reads only those; the others answer as missing ones.
    let statics = format!("{mcp_a}/statics");
    let listed = ask(&statics, ADA, "resources/list", json!({}), caps()).1;
    let mut uris: Vec<&str> = listed["result"]["resources"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|r| r["uri"].as_str())
        .collect();
    uris.sort_unstable();
    assert_eq!(
        uris,
        ["test://static-binary", "test://static-text"],
        "{listed}"
    );
    let templates = ask(&statics, ADA, "resources/templates/list", json!({}), caps()).1;
    assert_eq!(
        templates["result"]["resourceTemplates"],
        json!([]),
        "{templates}"
    );
    let read = ask(
        &statics,
        ADA,
        "resources/read",
        json!({"uri": "test://static-text"}),
        caps(),
    )
    .1;
    assert!(read["result"]["contents"][0]["text"].is_string(), "{read}");
    let hidden = ask(
        &statics,
        ADA,
        "resources/read",
        json!({"uri": "test://watched-resource"}),
        caps(),
    )
    .1;
    assert_eq!(hidden["error"]["code"], -32602, "{hidden}");
    let prompts = ask(&statics, ADA, "prompts/list", json!({}), caps()).1;
    assert_eq!(
        prompts["result"]["prompts"].as_array().map(Vec::len),
        Some(1),
        "{prompts}"
    );
    assert_eq!(
        prompts["result"]["prompts"][0]["name"],
        "test_simple_prompt"
    );
    let tools = ask(&statics, ADA, "tools/list", json!({}), caps()).1;
    assert_eq!(
        tools["result"]["tools"],
        json!([]),
        "such a selector holds no tool: {tools}"
    );

    // The upstream's -32021 reaches the client as that error, with HTTP 400.
    let (status, answer) = ask(
        &mcp_a,
        ADA,
        "tools/call",
        json!({"name": "test_missing_capability", "arguments": {}}),
        json!({}),
    );
    assert_eq!(
        (status, answer["error"]["code"].clone()),
        (400, json!(-32021)),
        "{answer}"
    );
    assert_eq!(
        answer["error"]["data"]["requiredCapabilities"],
        json!({"sampling": {}})
    );
    // With the capability declared, the same tool runs.
    let (status, answer) = ask(
        &mcp_a,
        ADA,
        "tools/call",
        json!({"name": "test_missing_capability", "arguments": {}}),
        json!({"sampling": {}}),
    );
    assert_eq!(
        (status, text(&answer)),
        (200, "Success".to_owned()),
        "{answer}"
    );

    // An argument the tool marks `x-mcp-header`, mirrored into Mcp-Param-Region (SEP-2243):
    // checked by toolsmith against the body before anything runs — a header that disagrees
    // with it, or one missing, is HTTP 400 with -32020 — and mirrored again upstream.
    let region = |headers: &[(&str, &str)]| {
        ask_with(
            &mcp_a,
            ADA,
            "tools/call",
            json!({"name": "test_custom_header", "arguments": {"region": "eu-west"}}),
            caps(),
            headers,
        )
    };
    for (headers, why) in [
        (vec![("mcp-param-region", "us-east")], "disagrees"),
        (vec![], "missing"),
        (
            vec![("mcp-param-region", "=?base64?ZXUtd2VzdA?=")],
            "bad base64",
        ),
    ] {
        let (status, answer) = region(&headers);
        assert_eq!(
            (status, answer["error"]["code"].clone()),
            (400, json!(-32020)),
            "{why}: {answer}"
        );
    }
    let (status, answer) = region(&[("Mcp-Param-Region", "=?base64?ZXUtd2VzdA==?=")]);
    assert_eq!(
        (status, text(&answer)),
        (200, "region eu-west".to_owned()),
        "{answer}"
    );
    // Refused at the door: only the accepted call ran.
    let runs = request_as(
        "GET",
        &format!("{rest_a}/runs?tool=test_custom_header"),
        None,
        Some(ADA),
    )
    .1;
    assert_eq!(runs["runs"].as_array().map(Vec::len), Some(1), "{runs}");
    drop(up);
}

/// A JSON-RPC message on a session: the HTTP status, the `Mcp-Session-Id` the answer
/// carries, and the SSE stream's messages, read on a thread as they come.
fn session_post(
    url: &str,
    session: Option<&str>,
    body: Value,
) -> (u16, Option<String>, std::sync::mpsc::Receiver<Value>) {
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(Duration::from_secs(120)))
        .build()
        .into();
    let mut req = ureq::http::Request::builder()
        .method("POST")
        .uri(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2025-11-25")
        .header("authorization", format!("Bearer {ADA}"));
    if let Some(id) = session {
        req = req.header("mcp-session-id", id);
    }
    let resp = agent
        .run(req.body(body.to_string().into_bytes()).expect("request"))
        .expect("send");
    let status = resp.status().as_u16();
    let id = resp
        .headers()
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let rx = messages(resp.into_body().into_reader());
    (status, id, rx)
}

fn next_message(rx: &std::sync::mpsc::Receiver<Value>, what: &str) -> Value {
    rx.recv_timeout(Duration::from_secs(60))
        .unwrap_or_else(|_| panic!("no {what} within 60 s"))
}

/// A catalog `file` in `dir` with the fixture at `port` twice — `modern` spoken to in
/// 2026-07-28, `legacy` in 2025-11-25 — serving `tools` of it, each marked safe.
fn both_eras(dir: &Path, file: &str, port: u16, tools: &[&str]) -> std::path::PathBuf {
    let safe: String = tools
        .iter()
        .map(|t| format!("      {t}: {{danger: safe}}\n"))
        .collect();
    let entry = |name: &str, protocol: &str| {
        format!(
            "  - name: {name}\n    url: http://127.0.0.1:{port}/mcp\n    protocol: \"{protocol}\"\n    \
             on_change: accept\n    include: [{}]\n    tools:\n{safe}",
            tools.join(", ")
        )
    };
    let path = dir.join(file);
    let yaml = format!(
        "mcp_servers:\n{}{}",
        entry("modern", "2026-07-28"),
        entry("legacy", "2025-11-25")
    );
    std::fs::write(&path, yaml).expect("write catalog");
    path
}

#[test]
#[ignore = "needs TOOLSMITH_TEST_PYTHON (the official MCP Python SDK of .ci/requirements.txt)"]
fn a_2025_session_moves_between_replicas_and_is_asked_during_a_call() {
    let python = python();
    let up = fixture(&python);
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("registry.db").display().to_string();
    // The fixture twice: spoken to in 2026-07-28 (its questions come as "input required",
    // answered by asking the client) and in 2025-11-25 (it asks during the call).
    let tools = [
        "test_sampling",
        "test_elicitation",
        "test_elicitation_url",
        "test_tool_with_logging",
    ];
    import_all(&db, &[both_eras(dir.path(), "eras.yaml", up.1, &tools)]);
    let tokens = [
        "--token",
        &format!("ada:call={ADA}"),
        "--token",
        &format!("root=ROOT-{ADA}"),
    ];
    let (_a, _, mcp_a) = serve(&db, dir.path(), &tokens);
    let (_b, rest_b, mcp_b) = serve(&db, dir.path(), &tokens);

    // Initialize on replica A.
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {"elicitation": {"form": {}, "url": {}}, "sampling": {}},
        "clientInfo": {"name": "relay-test", "version": "1"}}});
    let (status, session, rx) = session_post(&mcp_a, None, init);
    assert_eq!(status, 200);
    let session = session.expect("serve gives a 2025-11-25 client a session");
    let answer = next_message(&rx, "the initialize answer");
    assert_eq!(
        answer["result"]["protocolVersion"], "2025-11-25",
        "{answer}"
    );
    let (status, _, _) = session_post(
        &mcp_a,
        Some(&session),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    );
    assert!(status == 202 || status == 200, "{status}");

    // The log level the client set on one replica holds on the other. An upstream's log
    // messages during a 2025-11-25 session's call come on the session's GET stream (rmcp
    // routes notifications other than progress there), here on B: three info messages with
    // no level set, none once `warning` is set on A, three again after `debug`.
    let started = Instant::now();
    let heard = session_stream(&mcp_b, &session);
    let logged = |id: u64| {
        let call = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": "legacy__test_tool_with_logging", "arguments": {}}});
        let (status, _, rx) = session_post(&mcp_b, Some(&session), call);
        assert_eq!(status, 200);
        loop {
            let m = next_message(&rx, "the logging call's result");
            // The upstream's first listing may still be on its way to replica B.
            if m["error"]["code"] == -32602 && started.elapsed() < Duration::from_secs(60) {
                std::thread::sleep(Duration::from_millis(200));
                return false;
            }
            if m.get("id") == Some(&json!(id)) {
                assert_eq!(
                    m["result"]["content"][0]["text"], "Tool with logging executed successfully",
                    "{m}"
                );
                return true;
            }
        }
    };
    let set_level = |id: u64, level: &str| {
        let set = json!({"jsonrpc": "2.0", "id": id, "method": "logging/setLevel",
            "params": {"level": level}});
        let (status, _, rx) = session_post(&mcp_a, Some(&session), set);
        assert_eq!(status, 200);
        let answer = next_message(&rx, "the setLevel answer");
        assert!(answer["result"].is_object(), "{answer}");
    };
    while !logged(90) {}
    set_level(91, "warning");
    assert!(logged(92));
    set_level(93, "debug");
    assert!(logged(94));
    // All six are on the stream before the last call answered; a seventh (the filtered
    // call's, had it leaked) would be there too.
    let mut infos = 0;
    while infos < 6 {
        let m = next_message(&heard, "the upstream's log messages");
        if m["method"] == "notifications/message" {
            assert_eq!(m["params"]["level"], "info", "{m}");
            infos += 1;
        }
    }
    let more = heard.recv_timeout(Duration::from_secs(2));
    assert!(
        more.as_ref().is_err()
            || more
                .as_ref()
                .is_ok_and(|m| m["method"] != "notifications/message"),
        "a message the client's level filters reached it: {more:?}"
    );

    // Each tool on replica B (which takes up the session from the registry): the upstream's
    // question reaches this client during the call, and the answer finishes it.
    let started = Instant::now();
    for (i, server) in ["modern", "legacy"].into_iter().enumerate() {
        for (j, (tool, args, reply, expected)) in [
            (
                "test_elicitation",
                json!({"message": "Who are you?"}),
                json!({"action": "accept", "content": {"username": "ada", "email": "ada@example.com"}}),
                "Elicitation completed: action=accept",
            ),
            (
                "test_sampling",
                json!({"prompt": "Say hi"}),
                json!({"role": "assistant", "content": {"type": "text", "text": "hi from the model"}, "model": "m"}),
                "LLM response: hi from the model",
            ),
            (
                "test_elicitation_url",
                json!({}),
                json!({"action": "accept"}),
                "URL elicitation: accept",
            ),
        ]
        .into_iter()
        .enumerate()
        {
            let name = format!("{server}__{tool}");
            let id = 10 + i * 10 + j;
            // The upstream's first listing may still be on its way to replica B.
            let (mut status, mut rx);
            loop {
                let call = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                    "params": {"name": name, "arguments": args}});
                (status, _, rx) = session_post(&mcp_b, Some(&session), call);
                assert_eq!(status, 200, "{name}");
                let first = next_message(&rx, "the call's first message");
                if first["error"]["code"] == -32602 && started.elapsed() < Duration::from_secs(60) {
                    std::thread::sleep(Duration::from_millis(200));
                    continue;
                }
                let method = if tool == "test_sampling" { "sampling/createMessage" } else { "elicitation/create" };
                assert_eq!(first["method"], method, "{name}: {first}");
                if tool == "test_elicitation_url" {
                    // URL mode reaches a client that declared it, the page as the upstream
                    // gave it.
                    assert_eq!(
                        (&first["params"]["mode"], &first["params"]["url"]),
                        (&json!("url"), &json!("https://example.com/connect?state=s1")),
                        "{first}"
                    );
                }
                let reply = json!({"jsonrpc": "2.0", "id": first["id"], "result": reply});
                let (status, _, _) = session_post(&mcp_b, Some(&session), reply);
                assert!(status == 202 || status == 200, "{status}");
                break;
            }
            let result = loop {
                let m = next_message(&rx, "the call's result");
                if m.get("id") == Some(&json!(id)) {
                    break m;
                }
            };
            let said = result["result"]["content"][0]["text"].as_str().unwrap_or_default();
            assert!(said.starts_with(expected), "{name}: {result}");
        }
    }

    // A client that did not declare URL mode is never sent a URL-mode question: declined
    // for it, the call goes on.
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {"elicitation": {"form": {}}},
        "clientInfo": {"name": "forms-only", "version": "1"}}});
    let (_, forms_only, rx) = session_post(&mcp_a, None, init);
    let forms_only = forms_only.expect("a session");
    next_message(&rx, "the initialize answer");
    let call = json!({"jsonrpc": "2.0", "id": 80, "method": "tools/call",
        "params": {"name": "legacy__test_elicitation_url", "arguments": {}}});
    let (_, _, rx) = session_post(&mcp_a, Some(&forms_only), call);
    let first = next_message(&rx, "the URL-mode call's answer");
    assert_eq!(
        first["result"]["content"][0]["text"], "URL elicitation: decline",
        "{first}"
    );

    // Resumption: a client whose call's stream broke after the upstream's question
    // reconnects with the last event id it saw (Last-Event-ID) on the replica that streams
    // the call, answers, and gets the result on the resumed stream.
    let call = json!({"jsonrpc": "2.0", "id": 99, "method": "tools/call",
        "params": {"name": "legacy__test_elicitation", "arguments": {"message": "Again?"}}});
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .build()
        .into();
    let resp = agent
        .post(&mcp_b)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2025-11-25")
        .header("mcp-session-id", &session)
        .header("authorization", format!("Bearer {ADA}"))
        .send(call.to_string())
        .expect("the call");
    let first_stream = events(resp.into_body().into_reader());
    let (event_id, asked) = first_stream
        .recv_timeout(Duration::from_secs(60))
        .expect("the question within 60 s");
    assert_eq!(asked["method"], "elicitation/create", "{asked}");
    let event_id = event_id.expect("a session's events carry ids");
    let resumed = session_get(&mcp_b, &session, Some(&event_id));
    let reply = json!({"jsonrpc": "2.0", "id": asked["id"], "result":
        {"action": "accept", "content": {"username": "ada", "email": "ada@example.com"}}});
    let (status, _, _) = session_post(&mcp_b, Some(&session), reply);
    assert!(status == 202 || status == 200, "{status}");
    let result = loop {
        let m = next_message(&resumed, "the result on the resumed stream");
        if m.get("id") == Some(&json!(99)) {
            break m;
        }
    };
    let said = result["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default();
    assert!(
        said.starts_with("Elicitation completed: action=accept"),
        "{result}"
    );

    // The session's GET stream (on the replica it initialized on) hears that the tools
    // changed when a tool is disabled on the other replica.
    let stream = session_stream(&mcp_a, &session);
    let (status, body) = request_as(
        "POST",
        &format!("{rest_b}/tools/modern__test_sampling/disable"),
        None,
        Some(&format!("ROOT-{ADA}")),
    );
    assert_eq!(status, 200, "{body}");
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let m = stream
            .recv_timeout(left)
            .expect("no tools/list_changed on the session's stream within 60 s");
        if m["method"] == "notifications/tools/list_changed" {
            break;
        }
    }
    drop(up);
}

/// The session's standalone GET stream, its messages read on a thread.
fn session_stream(url: &str, session: &str) -> std::sync::mpsc::Receiver<Value> {
    session_get(url, session, None)
}

/// A GET on the session: its standalone stream, or — with `last_event_id` — the stream that
/// event was on, from the event after it (resumption).
fn session_get(
    url: &str,
    session: &str,
    last_event_id: Option<&str>,
) -> std::sync::mpsc::Receiver<Value> {
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .build()
        .into();
    let mut req = agent
        .get(url)
        .header("accept", "text/event-stream")
        .header("mcp-protocol-version", "2025-11-25")
        .header("mcp-session-id", session)
        .header("authorization", format!("Bearer {ADA}"));
    if let Some(id) = last_event_id {
        req = req.header("last-event-id", id);
    }
    let resp = req.call().expect("GET stream");
    assert_eq!(resp.status().as_u16(), 200, "the session's GET stream");
    messages(resp.into_body().into_reader())
}

/// The JSON messages of an answer (an SSE stream's `data:` lines, or plain JSON), read on a
/// thread as they come.
fn messages(reader: impl std::io::Read + Send + 'static) -> std::sync::mpsc::Receiver<Value> {
    let events = events(reader);
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        while let Ok((_, v)) = events.recv() {
            if tx.send(v).is_err() {
                return;
            }
        }
    });
    rx
}

/// The same with each message's SSE event id (the last `id:` line before it), if any.
fn events(
    reader: impl std::io::Read + Send + 'static,
) -> std::sync::mpsc::Receiver<(Option<String>, Value)> {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        use std::io::BufRead;
        let mut id = None;
        for line in std::io::BufReader::new(reader)
            .lines()
            .map_while(Result::ok)
        {
            if let Some(given) = line.strip_prefix("id:") {
                id = Some(given.trim().to_owned());
                continue;
            }
            let data = line.strip_prefix("data:").unwrap_or(&line).trim();
            if let Ok(v) = serde_json::from_str::<Value>(data)
                && tx.send((id.clone(), v)).is_err()
            {
                return;
            }
        }
    });
    rx
}

/// The FastMCP guard fixture (`tests/upstream/fastmcp_guard.py`) on a free port.
fn fastmcp_guard(python: &str) -> Upstream {
    listening(
        python,
        "upstream/fastmcp_guard.py",
        "the FastMCP guard server",
    )
}

#[test]
#[ignore = "needs TOOLSMITH_TEST_PYTHON (FastMCP of .ci/run)"]
fn a_fastmcp_guard_tool_asks_a_2026_client_through_serve() {
    let python = python();
    let up = fastmcp_guard(&python);
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("registry.db").display().to_string();
    let path = dir.path().join("guard.yaml");
    std::fs::write(
        &path,
        format!(
            "mcp_servers:\n  - name: guard\n    url: http://127.0.0.1:{}/mcp\n    protocol: \"2026-07-28\"\n",
            up.1
        ),
    )
    .expect("write catalog");
    import_all(&db, &[path]);
    let (_s, rest, mcp) = serve(&db, dir.path(), &["--token", &format!("ada:call={ADA}")]);
    let started = Instant::now();
    let first = loop {
        let answer = call(&mcp, ADA, "guard__greet", Value::Null, None);
        if answer["error"].is_null() {
            break answer;
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "guard__greet was never served ({rest}): {answer}"
        );
        std::thread::sleep(Duration::from_millis(200));
    };
    // FastMCP's question as it asked it; its own sealed state inside toolsmith's.
    let (keys, state) = asked(&first);
    assert_eq!(keys, ["name"], "{first}");
    assert_eq!(
        first["result"]["inputRequests"]["name"]["params"]["message"],
        "What is your name?"
    );
    assert!(
        state.starts_with("tsr1.") && !state.contains("v1."),
        "{state}"
    );
    let answers = json!({"name": accept(json!({"name": "Ada"}))});
    let done = call(&mcp, ADA, "guard__greet", answers.clone(), Some(&state));
    assert_eq!(text(&done), "hello Ada (state round-1)", "{done}");
    // Answers without toolsmith's state are not passed on: the upstream asks again.
    let again = call(&mcp, ADA, "guard__greet", answers, None);
    assert_eq!(asked(&again).0, ["name"], "{again}");
}

#[test]
#[ignore = "needs TOOLSMITH_TEST_PYTHON (the official MCP Python SDK of .ci/requirements.txt)"]
fn a_rest_caller_may_answer_an_upstreams_questions_with_their_defaults() {
    let python = python();
    let up = fixture(&python);
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("registry.db").display().to_string();
    // The fixture in both eras: a 2025-11-25 upstream asks during the call, a 2026-07-28 one
    // answers "input required" (answered by toolsmith for a REST caller).
    let tools = [
        "test_elicitation_sep1034_defaults",
        "test_elicitation",
        "test_elicitation_url",
    ];
    import_all(
        &db,
        &[both_eras(dir.path(), "questions.yaml", up.1, &tools)],
    );
    let (_s, rest, _) = serve(&db, dir.path(), &["--token", &format!("ada:call={ADA}")]);
    let ask = |tool: &str, questions: Option<&str>| -> String {
        let mut body = json!({"arguments": {}});
        if tool.ends_with("test_elicitation") {
            body["arguments"] = json!({"message": "Who?"});
        }
        if let Some(q) = questions {
            body["questions"] = json!(q);
        }
        let started = Instant::now();
        loop {
            let (status, result) = request_as(
                "POST",
                &format!("{rest}/tools/{tool}/call"),
                Some(body.clone()),
                Some(ADA),
            );
            if status == 200 {
                assert_eq!(result["success"], true, "{tool}: {result}");
                return result["data"].to_string();
            }
            // Until the upstream's first listing is in.
            assert_eq!(status, 404, "{tool}: {result}");
            assert!(
                started.elapsed() < Duration::from_secs(60),
                "{tool} was never served"
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    };
    for era in ["modern", "legacy"] {
        let defaults = format!("{era}__test_elicitation_sep1034_defaults");
        // Declined unless the caller says to take the defaults…
        let declined = ask(&defaults, None);
        assert!(declined.contains("action=decline"), "{era}: {declined}");
        // …then accepted with every field's default, of each type.
        let taken = ask(&defaults, Some("defaults"));
        assert!(taken.contains("action=accept"), "{era}: {taken}");
        for value in ["John Doe", "30", "95.5", "active", "True"] {
            assert!(taken.contains(value), "{era}: {value} missing from {taken}");
        }
        // Required fields without defaults, and a page to visit: declined all the same.
        let form = ask(&format!("{era}__test_elicitation"), Some("defaults"));
        assert!(form.contains("action=decline"), "{era}: {form}");
        let page = ask(&format!("{era}__test_elicitation_url"), Some("defaults"));
        assert!(page.contains("decline"), "{era}: {page}");
    }
    // Anything else is refused, naming what is accepted.
    let (status, refused) = request_as(
        "POST",
        &format!("{rest}/tools/modern__test_elicitation/call"),
        Some(json!({"arguments": {"message": "m"}, "questions": "ask"})),
        Some(ADA),
    );
    assert_eq!(status, 422, "{refused}");
    assert!(refused.to_string().contains("defaults"), "{refused}");
}
