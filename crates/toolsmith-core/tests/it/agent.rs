//! The agent's pure half: the transition table, the reducer's guarantees under random event
//! sequences, and the stream readers on real transcripts split at every byte.

use expect_test::expect;
use proptest::prelude::*;
use toolsmith_core::agent::history::{
    Item, ToolCall, answered, anthropic_messages, openai_messages,
};
use toolsmith_core::agent::machine::{
    Effect, Event, EventKind, Machine, State, TABLE, next, table_markdown,
};
use toolsmith_core::agent::sse::Decoder;
use toolsmith_core::agent::stream::{Anthropic, Assembler, Delta, OpenAi, Response, StreamError};

#[test]
fn the_table_is_the_seeds_plus_four_events() {
    expect![[r#"
        | from | event | to |
        |---|---|---|
        | `idle` | `user_message` | `streaming` |
        | `streaming` | `safe_tool_detected` | `tool_executing` |
        | `streaming` | `dangerous_tool_detected` | `awaiting_confirmation` |
        | `streaming` | `streaming_complete` | `idle` |
        | `awaiting_confirmation` | `user_confirmed` | `tool_executing` |
        | `awaiting_confirmation` | `user_rejected` | `idle` |
        | `tool_executing` | `tool_completed` | `streaming` |
        | `idle` | `error_occurred` | `error` |
        | `streaming` | `error_occurred` | `error` |
        | `awaiting_confirmation` | `error_occurred` | `error` |
        | `tool_executing` | `error_occurred` | `error` |
        | `error` | `reset` | `idle` |
        | `awaiting_confirmation` | `user_declined` | `streaming` |
        | `streaming` | `interrupted` | `idle` |
        | `awaiting_confirmation` | `interrupted` | `idle` |
        | `tool_executing` | `interrupted` | `idle` |
        | `streaming` | `turn_limit_reached` | `idle` |
    "#]]
    .assert_eq(&table_markdown());
}

#[test]
fn every_pair_not_in_the_table_is_refused() {
    let mut allowed = 0;
    for s in State::ALL {
        for e in EventKind::ALL {
            let row = TABLE.iter().find(|(f, ev, _)| *f == s && *ev == e);
            assert_eq!(next(s, e), row.map(|r| r.2), "{s:?} {e:?}");
            allowed += usize::from(row.is_some());
        }
        // Error is reachable from every other state; only reset leaves it.
        if s != State::Error {
            assert_eq!(next(s, EventKind::ErrorOccurred), Some(State::Error));
        }
    }
    assert_eq!(allowed, TABLE.len(), "no duplicate rows");
    assert_eq!(
        EventKind::ALL
            .iter()
            .filter_map(|e| next(State::Error, *e))
            .collect::<Vec<_>>(),
        [State::Idle]
    );
}

fn call(id: &str, name: &str) -> ToolCall {
    ToolCall {
        id: id.into(),
        name: name.into(),
        arguments: "{}".into(),
    }
}

fn runs(fx: &[Effect]) -> Vec<(String, bool)> {
    fx.iter()
        .filter_map(|e| match e {
            Effect::Run { call, confirmed } => Some((call.id.clone(), *confirmed)),
            _ => None,
        })
        .collect()
}

#[test]
fn a_turn_with_a_safe_and_a_dangerous_call() {
    let mut m = Machine::new(20);
    let fx = m.step(Event::UserMessage("tidy up".into())).expect("ok");
    assert!(fx.contains(&Effect::Request));
    assert_eq!(m.state, State::Streaming);
    let fx = m
        .step(Event::Response {
            text: "Sure.".into(),
            calls: vec![call("a", "list_dir"), call("b", "remove_files")],
        })
        .expect("ok");
    assert_eq!(fx.last(), Some(&Effect::Classify(call("a", "list_dir"))));
    let fx = m.step(Event::Safe).expect("ok");
    assert_eq!(runs(&fx), [("a".into(), false)]);
    assert_eq!(m.state, State::ToolExecuting);
    let fx = m
        .step(Event::ToolCompleted {
            content: "a.txt".into(),
            is_error: false,
        })
        .expect("ok");
    assert_eq!(
        fx.last(),
        Some(&Effect::Classify(call("b", "remove_files")))
    );
    m.step(Event::Dangerous).expect("ok");
    assert_eq!(m.state, State::AwaitingConfirmation);
    // A tool result cannot arrive while the user is being asked.
    let refused = m
        .step(Event::ToolCompleted {
            content: String::new(),
            is_error: false,
        })
        .expect_err("refused");
    assert_eq!(
        (refused.state, m.state),
        (State::AwaitingConfirmation, State::AwaitingConfirmation)
    );
    let fx = m
        .step(Event::Declined {
            reason: Some("not now".into()),
        })
        .expect("ok");
    assert!(fx.contains(&Effect::Request), "the loop goes on: {fx:?}");
    assert_eq!(m.state, State::Streaming);
    assert!(answered(&m.history).is_ok());
    let Some(Item::ToolResult {
        content, is_error, ..
    }) = m.history.last()
    else {
        panic!("a result")
    };
    assert!(
        content.contains("declined") && content.contains("not now") && *is_error,
        "{content}"
    );
    m.step(Event::Response {
        text: "Done; I left the files.".into(),
        calls: vec![],
    })
    .expect("ok");
    assert_eq!(m.state, State::Idle);
}

#[test]
fn stopping_answers_every_call_left_and_always_skips_the_question() {
    let mut m = Machine::new(20);
    m.step(Event::UserMessage("go".into())).expect("ok");
    m.step(Event::Response {
        text: String::new(),
        calls: vec![call("a", "rm"), call("b", "rm"), call("c", "ls")],
    })
    .expect("ok");
    m.step(Event::Dangerous).expect("ok");
    let fx = m.step(Event::Rejected).expect("ok");
    assert_eq!(m.state, State::Idle);
    assert!(runs(&fx).is_empty() && !fx.contains(&Effect::Request));
    assert!(answered(&m.history).is_ok(), "{:?}", m.history);
    // "Always": approved once, the tool is not asked about again this session.
    m.step(Event::UserMessage("again".into())).expect("ok");
    m.step(Event::Response {
        text: String::new(),
        calls: vec![call("d", "rm")],
    })
    .expect("ok");
    m.step(Event::Dangerous).expect("ok");
    let fx = m.step(Event::Confirmed { always: true }).expect("ok");
    assert_eq!(runs(&fx), [("d".into(), true)]);
    m.step(Event::ToolCompleted {
        content: "ok".into(),
        is_error: false,
    })
    .expect("ok");
    m.step(Event::Response {
        text: String::new(),
        calls: vec![call("e", "rm")],
    })
    .expect("ok");
    let fx = m.step(Event::Dangerous).expect("ok");
    assert_eq!(runs(&fx), [("e".into(), true)]);
    assert!(!fx.iter().any(|e| matches!(e, Effect::Ask(_))));
}

#[test]
fn interrupts_the_turn_limit_and_errors_keep_the_history_valid() {
    let mut m = Machine::new(2);
    m.step(Event::UserMessage("loop".into())).expect("ok");
    for i in 0..2 {
        m.step(Event::Response {
            text: String::new(),
            calls: vec![call(&format!("c{i}"), "ls")],
        })
        .expect("ok");
        m.step(Event::Safe).expect("ok");
        let fx = m
            .step(Event::ToolCompleted {
                content: "x".into(),
                is_error: false,
            })
            .expect("ok");
        if i == 1 {
            assert!(
                !fx.contains(&Effect::Request),
                "the second request was the last"
            );
            assert!(
                fx.iter()
                    .any(|e| matches!(e, Effect::Notice(n) if n.contains("--max-turns")))
            );
        }
    }
    assert_eq!(m.state, State::Idle);
    assert!(answered(&m.history).is_ok());
    // Ctrl-C while a tool runs: its call is answered.
    m.step(Event::UserMessage("once more".into())).expect("ok");
    m.step(Event::Response {
        text: String::new(),
        calls: vec![call("z", "sleep"), call("y", "ls")],
    })
    .expect("ok");
    m.step(Event::Safe).expect("ok");
    m.step(Event::Interrupted {
        partial: String::new(),
    })
    .expect("ok");
    assert_eq!(m.state, State::Idle);
    assert!(answered(&m.history).is_ok(), "{:?}", m.history);
    // Ctrl-C while streaming keeps the partial text.
    m.step(Event::UserMessage("talk".into())).expect("ok");
    m.step(Event::Interrupted {
        partial: "Half a sen".into(),
    })
    .expect("ok");
    assert!(matches!(m.history.last(), Some(Item::Assistant { text, .. }) if text == "Half a sen"));
    // An error, then reset.
    m.step(Event::UserMessage("fail".into())).expect("ok");
    m.step(Event::Error("HTTP 500".into())).expect("ok");
    assert_eq!(m.state, State::Error);
    assert!(m.step(Event::UserMessage("x".into())).is_err());
    m.step(Event::Reset).expect("ok");
    assert_eq!(m.state, State::Idle);
}

fn arb_event() -> impl Strategy<Value = Event> {
    let calls = prop::collection::vec((0u8..4, prop::bool::ANY), 0..4).prop_map(|v| {
        v.into_iter()
            .enumerate()
            .map(|(i, (n, _))| ToolCall {
                id: format!("id{i}"),
                name: format!("t{n}"),
                arguments: "{}".into(),
            })
            .collect::<Vec<_>>()
    });
    prop_oneof![
        Just(Event::UserMessage("hi".into())),
        calls.prop_map(|calls| Event::Response {
            text: "t".into(),
            calls
        }),
        Just(Event::Safe),
        Just(Event::Dangerous),
        prop::bool::ANY.prop_map(|always| Event::Confirmed { always }),
        Just(Event::Declined { reason: None }),
        Just(Event::Rejected),
        Just(Event::ToolCompleted {
            content: "r".into(),
            is_error: false
        }),
        Just(Event::Error("e".into())),
        Just(Event::Reset),
        Just(Event::Interrupted {
            partial: "p".into()
        }),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    /// Whatever happens: no panic; a refused event changes nothing; a tool runs only right
    /// after `Safe`, or confirmed (by the user, or by "always" for its name); every request
    /// goes out with every call answered; reset always returns to idle.
    #[test]
    fn the_machine_keeps_its_promises(events in prop::collection::vec(arb_event(), 1..60)) {
        let mut m = Machine::new(5);
        for e in events {
            let before_state = m.state;
            let before_len = m.history.len();
            let always_before = m.always.clone();
            let current = m.current().cloned();
            let was = e.clone();
            match m.step(e) {
                Err(r) => {
                    prop_assert_eq!(r.state, before_state);
                    prop_assert_eq!(m.state, before_state);
                    prop_assert_eq!(m.history.len(), before_len);
                }
                Ok(fx) => {
                    for effect in &fx {
                        match effect {
                            Effect::Run { call, confirmed: false } => {
                                prop_assert!(matches!(was, Event::Safe), "ran without Safe: {was:?}");
                                prop_assert_eq!(Some(call), current.as_ref());
                            }
                            Effect::Run { call, confirmed: true } => prop_assert!(
                                matches!(was, Event::Confirmed { .. })
                                    || (matches!(was, Event::Dangerous) && always_before.contains(&call.name)),
                                "ran confirmed without a confirmation: {was:?}"
                            ),
                            Effect::Request => prop_assert!(answered(&m.history).is_ok(), "{:?}", m.history),
                            _ => {}
                        }
                    }
                    if matches!(was, Event::Reset) {
                        prop_assert_eq!(m.state, State::Idle);
                    }
                }
            }
        }
        // From any state an error is reachable, and reset then returns to idle.
        let _ = m.step(Event::Error("final".into()));
        prop_assert_eq!(m.state, State::Error);
        m.step(Event::Reset).expect("reset");
        prop_assert_eq!(m.state, State::Idle);
        prop_assert!(answered(&m.history).is_ok(), "{:?}", m.history);
    }
}

/// Reads `body` with `assembler`, the bytes split at `cut`, as a client would.
fn read<A: Assembler + Default>(
    body: &str,
    cut: usize,
) -> (Vec<Delta>, Result<Response, StreamError>) {
    let mut a = A::default();
    let mut d = Decoder::new();
    let mut deltas = Vec::new();
    let (x, y) = body.as_bytes().split_at(cut);
    for part in [x, y] {
        for e in d.push(part) {
            match a.event(&e) {
                Ok(ds) => deltas.extend(ds),
                Err(err) => return (deltas, Err(err)),
            }
        }
    }
    for e in d.finish() {
        match a.event(&e) {
            Ok(ds) => deltas.extend(ds),
            Err(err) => return (deltas, Err(err)),
        }
    }
    (deltas, Ok(a.response()))
}

/// Every cut gives the same answer.
fn same_at_every_cut<A: Assembler + Default>(body: &str) -> Result<Response, StreamError> {
    let whole = read::<A>(body, 0).1;
    for cut in 1..body.len() {
        assert_eq!(read::<A>(body, cut).1, whole, "cut at {cut}");
    }
    whole
}

const O2: &str = r#"data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1700000000,"model":"test-model","choices":[{"index":0,"delta":{"role":"assistant","content":null},"finish_reason":null}],"usage":null}

data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1700000000,"model":"test-model","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_a","type":"function","function":{"name":"list_dir","arguments":""}}]},"finish_reason":null}],"usage":null}

data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1700000000,"model":"test-model","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"path\":"}}]},"finish_reason":null}],"usage":null}

data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1700000000,"model":"test-model","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":" \".\"}"}}]},"finish_reason":null}],"usage":null}

data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1700000000,"model":"test-model","choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"id":"call_b","type":"function","function":{"name":"delete_file","arguments":""}}]},"finish_reason":null}],"usage":null}

data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1700000000,"model":"test-model","choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"function":{"arguments":"{\"path\": \"tmp.txt\"}"}}]},"finish_reason":null}],"usage":null}

data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1700000000,"model":"test-model","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}],"usage":null}

data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1700000000,"model":"test-model","choices":[],"usage":{"prompt_tokens":120,"completion_tokens":31,"total_tokens":151}}

data: [DONE]

"#;

#[test]
fn openai_parallel_calls_with_fragmented_arguments() {
    let r = same_at_every_cut::<OpenAi>(O2).expect("ok");
    assert_eq!(
        r.calls,
        [
            ToolCall {
                id: "call_a".into(),
                name: "list_dir".into(),
                arguments: "{\"path\": \".\"}".into()
            },
            ToolCall {
                id: "call_b".into(),
                name: "delete_file".into(),
                arguments: "{\"path\": \"tmp.txt\"}".into()
            },
        ]
    );
    assert_eq!(r.finish.as_deref(), Some("tool_calls"));
    assert_eq!(
        r.usage.map(|u| (u.input_tokens, u.output_tokens)),
        Some((120, 31))
    );
}

#[test]
fn openai_quirks() {
    // Text only, CRLF line ends, keep-alive comments, `usage: {}`, no [DONE].
    let text = ": keep-alive\r\n\r\ndata: {\"choices\":[{\"delta\":{\"content\":\"hi\"}}],\"usage\":{}}\r\n\r\ndata: {\"choices\":[{\"delta\":{\"content\":\" there\"},\"finish_reason\":\"stop\"}]}\r\n\r\n";
    let (deltas, r) = read::<OpenAi>(text, 0);
    assert_eq!(
        deltas,
        [Delta::Text("hi".into()), Delta::Text(" there".into())]
    );
    let r = r.expect("ok");
    assert_eq!(
        (r.text.as_str(), r.calls.len(), r.usage),
        ("hi there", 0, None)
    );
    same_at_every_cut::<OpenAi>(text).expect("ok");
    // A name split across fragments, no `type`, `finish_reason: stop` with a call, reasoning.
    let quirky = concat!(
        "data: {\"choices\":[{\"delta\":{\"reasoning_content\":\"thinking\"}}]}\n\n",
        "data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"c1\",\"function\":{\"name\":\"list_\"}}]}}]}\n\n",
        "data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"name\":\"dir\",\"arguments\":\"{}\"}}]},\"finish_reason\":\"stop\"}]}\n\n",
        "data: [DONE]\n\n"
    );
    let (deltas, r) = read::<OpenAi>(quirky, 0);
    assert_eq!(deltas, [Delta::Reasoning("thinking".into())]);
    assert_eq!(
        r.expect("ok").calls,
        [ToolCall {
            id: "c1".into(),
            name: "list_dir".into(),
            arguments: "{}".into()
        }]
    );
    // A mid-stream error, and a chunk that is not JSON, fail plainly.
    let err = "data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\n\ndata: {\"error\":{\"message\":\"boom\",\"type\":\"server_error\"}}\n\ndata: [DONE]\n\n";
    assert_eq!(
        read::<OpenAi>(err, 0).1,
        Err(StreamError::Provider("boom (server_error)".into()))
    );
    assert!(matches!(
        read::<OpenAi>("data: not-json\n\n", 0).1,
        Err(StreamError::Malformed(_))
    ));
}

const A1: &str = r#"event: message_start
data: {"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"test-model","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":120,"output_tokens":1}}}

event: content_block_start
data: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}

event: ping
data: {"type":"ping"}

event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Let me look."}}

event: content_block_stop
data: {"type":"content_block_stop","index":0}

event: content_block_start
data: {"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_a","name":"list_dir","input":{}}}

event: content_block_delta
data: {"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":""}}

event: content_block_delta
data: {"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"path\": \""}}

event: content_block_delta
data: {"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":".\"}"}}

event: content_block_stop
data: {"type":"content_block_stop","index":1}

event: content_block_start
data: {"type":"content_block_start","index":2,"content_block":{"type":"tool_use","id":"toolu_b","name":"delete_file","input":{}}}

event: content_block_delta
data: {"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":"{\"path\": \"tmp.txt\"}"}}

event: content_block_stop
data: {"type":"content_block_stop","index":2}

event: message_delta
data: {"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":45}}

event: message_stop
data: {"type":"message_stop"}

"#;

#[test]
fn anthropic_text_and_two_tool_uses() {
    let r = same_at_every_cut::<Anthropic>(A1).expect("ok");
    assert_eq!(r.text, "Let me look.");
    assert_eq!(
        r.calls,
        [
            ToolCall {
                id: "toolu_a".into(),
                name: "list_dir".into(),
                arguments: "{\"path\": \".\"}".into()
            },
            ToolCall {
                id: "toolu_b".into(),
                name: "delete_file".into(),
                arguments: "{\"path\": \"tmp.txt\"}".into()
            },
        ]
    );
    assert_eq!(r.finish.as_deref(), Some("tool_use"));
    assert_eq!(
        r.usage.map(|u| (u.input_tokens, u.output_tokens)),
        Some((120, 45))
    );
    let err = "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n";
    assert_eq!(
        read::<Anthropic>(err, 0).1,
        Err(StreamError::Provider(
            "Overloaded (overloaded_error)".into()
        ))
    );
}

#[test]
fn the_history_in_each_providers_form() {
    let items = vec![
        Item::User {
            text: "tidy".into(),
        },
        Item::Assistant {
            text: String::new(),
            calls: vec![
                ToolCall {
                    id: "a".into(),
                    name: "list_dir".into(),
                    arguments: "{\"path\": \".\"}".into(),
                },
                ToolCall {
                    id: "b".into(),
                    name: "delete_file".into(),
                    arguments: "not json".into(),
                },
            ],
        },
        Item::ToolResult {
            call_id: "a".into(),
            name: "list_dir".into(),
            content: "a.txt".into(),
            is_error: false,
        },
        Item::ToolResult {
            call_id: "b".into(),
            name: "delete_file".into(),
            content: "declined".into(),
            is_error: true,
        },
    ];
    assert!(answered(&items).is_ok());
    expect![[r#"[{"role":"system","content":"be brief"},{"role":"user","content":"tidy"},{"role":"assistant","content":null,"tool_calls":[{"id":"a","type":"function","function":{"name":"list_dir","arguments":"{\"path\": \".\"}"}},{"id":"b","type":"function","function":{"name":"delete_file","arguments":"not json"}}]},{"role":"tool","tool_call_id":"a","content":"a.txt"},{"role":"tool","tool_call_id":"b","content":"declined"}]"#]]
        .assert_eq(&serde_json::to_string(&openai_messages(Some("be brief"), &items)).expect("json"));
    expect![[r#"[{"role":"user","content":[{"type":"text","text":"tidy"}]},{"role":"assistant","content":[{"type":"tool_use","id":"a","name":"list_dir","input":{"path":"."}},{"type":"tool_use","id":"b","name":"delete_file","input":{}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"a","content":"a.txt","is_error":false},{"type":"tool_result","tool_use_id":"b","content":"declined","is_error":true}]}]"#]]
        .assert_eq(&serde_json::to_string(&anthropic_messages(&items)).expect("json"));
    // An unanswered call is caught.
    assert_eq!(
        answered(&items[..3]).expect_err("unanswered"),
        toolsmith_core::agent::history::Unanswered::AtEnd("b".into())
    );
}

#[test]
fn architecture_md_prints_the_same_table() {
    let doc = include_str!("../../../../ARCHITECTURE.md");
    assert!(
        doc.contains(&table_markdown()),
        "ARCHITECTURE.md's state table differs from TABLE:\n{}",
        table_markdown()
    );
}
