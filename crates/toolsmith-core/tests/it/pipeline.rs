//! The argument pipeline (SPEC §3.2): parse → coerce → defaults → validate.

use expect_test::{Expect, expect};
use proptest::prelude::*;
use serde_json::{Value, json};
use toolsmith_core::CompiledTool;

use super::support::{compiled, json};

/// A tool with one parameter of each kind, for the coercion table.
fn typed() -> CompiledTool {
    compiled(
        r#"
name: typed
description: d
script: {source: "x"}
parameters:
  - {name: s, required: false}
  - {name: i, type: integer, required: false}
  - {name: n, type: number, required: false}
  - {name: b, type: boolean, required: false}
  - {name: a, type: array, items: {type: integer}, required: false}
  - {name: o, type: object, properties: [{name: depth, type: integer}, {name: tags, type: array, items: string, required: false}], required: false}
  - {name: e, type: enum, values: [1, 2, 3], required: false}
  - {name: es, type: enum, values: ["1", "2"], required: false}
  - {name: ni, type: integer, nullable: true, required: false}
"#,
    )
}

/// Runs `args` and prints the outcome: the arguments and coercions, or the problems.
fn run(tool: &CompiledTool, args: Value) -> String {
    match tool.prepare(args) {
        Ok(p) => format!("ok {}\ncoerced {:?}", Value::Object(p.arguments), p.coerced),
        Err(problems) => problems.iter().map(|p| format!("{p}\n")).collect(),
    }
}

fn check(args: &str, expect: Expect) {
    expect.assert_eq(&run(&typed(), json(args)));
}

#[test]
fn integers_from_strings() {
    check(
        r#"{"i": "2000"}"#,
        expect![[r#"
        ok {"i":2000}
        coerced ["i: string→integer"]"#]],
    );
    check(
        r#"{"i": " -7 "}"#,
        expect![[r#"
        ok {"i":-7}
        coerced ["i: string→integer"]"#]],
    );
    check(
        r#"{"i": "2.5"}"#,
        expect![[r#"
        /i: "2.5" is not an integer
    "#]],
    );
    check(
        r#"{"i": "12abc"}"#,
        expect![[r#"
        /i: "12abc" is not an integer
    "#]],
    );
    check(
        r#"{"i": "1e400"}"#,
        expect![[r#"
        /i: "1e400" is not an integer
    "#]],
    );
    check(
        r#"{"i": 2.0}"#,
        expect![[r#"
        ok {"i":2}
        coerced []"#]],
    );
    check(
        r#"{"i": 1e19}"#,
        expect![[r#"
            /i: 10000000000000000000 is out of range for a 64-bit integer
        "#]],
    );
}

#[test]
fn numbers_from_strings() {
    check(
        r#"{"n": "2.5"}"#,
        expect![[r#"
        ok {"n":2.5}
        coerced ["n: string→number"]"#]],
    );
    check(
        r#"{"n": "1e400"}"#,
        expect![[r#"
            /n: "1e400" is out of range for a number (a 64-bit floating-point number holds up to about 1.8e308)
        "#]],
    );
    check(
        r#"{"n": "NaN"}"#,
        expect![[r#"
        /n: "NaN" is not a number
    "#]],
    );
    check(
        r#"{"n": "inf"}"#,
        expect![[r#"
        /n: "inf" is not a number
    "#]],
    );
}

#[test]
fn booleans_only_from_true_and_false() {
    check(
        r#"{"b": "TRUE"}"#,
        expect![[r#"
        ok {"b":true}
        coerced ["b: string→boolean"]"#]],
    );
    check(
        r#"{"b": "false"}"#,
        expect![[r#"
        ok {"b":false}
        coerced ["b: string→boolean"]"#]],
    );
    check(
        r#"{"b": "yes"}"#,
        expect![[r#"
        /b: "yes" is not a boolean
    "#]],
    );
    check(
        r#"{"b": "1"}"#,
        expect![[r#"
        /b: "1" is not a boolean
    "#]],
    );
}

#[test]
fn arrays_and_objects_from_json_text_with_nested_rules() {
    check(
        r#"{"a": "[1, \"2\", 3]"}"#,
        expect![[r#"
        ok {"a":[1,2,3]}
        coerced ["a: string→array", "a[1]: string→integer"]"#]],
    );
    check(
        r#"{"a": "{\"x\": 1}"}"#,
        expect![[r#"
        /a: "{\"x\": 1}" is not an array
    "#]],
    );
    check(
        r#"{"a": "[1, 2"}"#,
        expect![[r#"
            /a: looks like a JSON array sent as text, but it does not parse: EOF while parsing a list at line 1 column 6
        "#]],
    );
    check(
        r#"{"o": "{\"depth\": \"3\", \"tags\": \"[\\\"x\\\"]\"}"}"#,
        expect![[r#"
        ok {"o":{"depth":3,"tags":["x"]}}
        coerced ["o: string→object", "o.depth: string→integer", "o.tags: string→array"]"#]],
    );
    check(
        r#"{"o": "[1]"}"#,
        expect![[r#"
        /o: "[1]" is not an object
    "#]],
    );
}

#[test]
fn strings_are_never_parsed() {
    check(
        r#"{"s": "[1, 2]"}"#,
        expect![[r#"
        ok {"s":"[1, 2]"}
        coerced []"#]],
    );
    check(
        r#"{"s": "{\"a\": 1}", "es": "1"}"#,
        expect![[r#"
        ok {"s":"{\"a\": 1}","es":"1"}
        coerced []"#]],
    );
    check(
        r#"{"s": 5}"#,
        expect![[r#"
        /s: 5 is not a string
    "#]],
    );
}

#[test]
fn integer_enums_and_nullable_types() {
    check(
        r#"{"e": "2"}"#,
        expect![[r#"
        ok {"e":2}
        coerced ["e: string→integer"]"#]],
    );
    check(
        r#"{"e": "4"}"#,
        expect![[r#"
        /e: 4 is not one of 1, 2, 3
    "#]],
    );
    check(
        r#"{"ni": "5"}"#,
        expect![[r#"
        ok {"ni":5}
        coerced ["ni: string→integer"]"#]],
    );
    check(
        r#"{"ni": null}"#,
        expect![[r#"
        ok {"ni":null}
        coerced []"#]],
    );
    // OpenAI strict mode sends null for an optional parameter it leaves out.
    check(
        r#"{"i": null}"#,
        expect![[r#"
        ok {}
        coerced ["i: null→omitted"]"#]],
    );
}

/// A tool for the "no silent change" corpus: what a model sent arrives exactly or is refused.
fn sloppy() -> CompiledTool {
    compiled(
        r#"
name: sloppy
description: d
script: {source: "x"}
parameters:
  - {name: limit, type: integer, required: false}
  - {name: n, type: number, required: false}
  - {name: paths, type: array, items: string, required: false}
  - {name: opts, type: object, properties: [{name: k, required: false}], required: false}
  - {name: order, type: enum, values: [asc, desc], required: false}
  - {name: mode, type: enum, values: [fast, FAST, slow], required: false}
"#,
    )
}

/// Arguments given as text, as OpenAI sends them and `--args` takes them.
fn text(args: &str) -> String {
    run(&sloppy(), Value::String(args.into()))
}

#[test]
fn no_silent_change_of_what_the_model_sent() {
    // Duplicate keys: refused, naming the key, at any depth.
    expect![[r#"
        /limit: the key "limit" is given twice; send each key once
    "#]]
    .assert_eq(&text(r#"{"limit": 5, "limit": 50}"#));
    expect![[r#"
        /opts/k: the key "k" is given twice; send each key once
    "#]]
    .assert_eq(&text(r#"{"opts": {"k": "a", "k": "b"}}"#));
    expect![[r#"
        /paths: a JSON array sent as text, refused: /0/a: the key "a" is given twice; send each key once
    "#]]
    .assert_eq(&text(r#"{"paths": "[{\"a\": 1, \"a\": 2}]"}"#));
    // Integers beyond 64 bits: both sides refused, quoting what was sent.
    expect![[r#"
        /limit: -9223372036854775809 is out of range: integers must fit in 64 bits (-9223372036854775808 to 18446744073709551615)
    "#]]
    .assert_eq(&text(r#"{"limit": -9223372036854775809}"#));
    expect![[r#"
        /limit: 9223372036854775808 is out of range for a 64-bit integer (at most 9223372036854775807)
    "#]]
    .assert_eq(&text(r#"{"limit": 9223372036854775808}"#));
    expect![[r#"
        /limit: 99999999999999999999 is out of range: integers must fit in 64 bits (-9223372036854775808 to 18446744073709551615)
    "#]]
    .assert_eq(&text(r#"{"limit": 99999999999999999999}"#));
    expect![[r#"
        /limit: "-9223372036854775809" is out of range for a 64-bit integer (-9223372036854775808 to 9223372036854775807)
    "#]]
    .assert_eq(&text(r#"{"limit": "-9223372036854775809"}"#));
    expect![[r#"
        ok {"limit":-9223372036854775808}
        coerced []"#]]
    .assert_eq(&text(r#"{"limit": -9223372036854775808}"#));
    // A number sent as text keeps its exact value, or is refused.
    expect![[r#"
        ok {"n":9007199254740993}
        coerced ["n: string→number"]"#]]
    .assert_eq(&text(r#"{"n": "9007199254740993"}"#));
    expect![[r#"
        ok {"n":9007199254740993}
        coerced []"#]]
    .assert_eq(&text(r#"{"n": 9007199254740993}"#));
    expect![[r#"
        /n: "9007199254740993.5" cannot be held exactly by a 64-bit floating-point number (it would become 9007199254740994); send a number with fewer digits
    "#]]
    .assert_eq(&text(r#"{"n": "9007199254740993.5"}"#));
    expect![[r#"
        ok {"n":0.1}
        coerced ["n: string→number"]"#]]
    .assert_eq(&text(r#"{"n": "0.1"}"#));
    expect![[r#"
        /n: 2.0000000000000001 cannot be kept exactly: a 64-bit floating-point number would round it to the whole number 2
    "#]]
    .assert_eq(&text(r#"{"n": 2.0000000000000001}"#));
    // "null" and "" mean no arguments, and say so.
    expect![[r#"
        ok {}
        coerced ["arguments: null→no arguments"]"#]]
    .assert_eq(&text("null"));
    expect![[r#"
        ok {}
        coerced ["arguments: empty text→no arguments"]"#]]
    .assert_eq(&text("  "));
    // JSON text cut short says it looked like JSON and where it broke.
    expect![[r#"
        /paths: looks like a JSON array sent as text, but it does not parse: EOF while parsing a string at line 1 column 9
    "#]]
    .assert_eq(&text(r#"{"paths": "[\"a\", \"b"}"#));
    expect![[r#"
        /opts: looks like a JSON object sent as text, but it does not parse: expected `,` or `}` at line 1 column 11
    "#]]
    .assert_eq(&text(r#"{"opts": "{\"k\": \"a\" \"j\"}"}"#));
    // Beyond any peer: a markdown code fence around the arguments is taken off.
    expect![[r#"
        ok {"limit":3}
        coerced ["arguments: markdown code fence removed", "limit: string→integer"]"#]]
    .assert_eq(&text("```json\n{\"limit\": \"3\"}\n```"));
    expect![[r#"
        ok {"limit":3}
        coerced ["arguments: markdown code fence removed"]"#]]
    .assert_eq(&text("```\n{\"limit\": 3}\n```"));
    // An enum value that matches exactly one allowed value but for case is mapped to it;
    // one matching two is refused.
    expect![[r#"
        ok {"order":"desc"}
        coerced ["order: \"DESC\" → desc (enum case)"]"#]]
    .assert_eq(&text(r#"{"order": "DESC"}"#));
    expect![[r#"
        /mode: "Fast" is not one of "fast", "FAST", "slow"
    "#]]
    .assert_eq(&text(r#"{"mode": "Fast"}"#));
    expect![[r#"
        ok {"mode":"slow"}
        coerced ["mode: \"Slow\" → slow (enum case)"]"#]]
    .assert_eq(&text(r#"{"mode": "Slow"}"#));
}

/// Arguments that arrive already parsed (MCP): floats only become integers when exact.
#[test]
fn parsed_floats_become_integers_only_when_exact() {
    let t = sloppy();
    expect![[r#"
        ok {"limit":9007199254740992}
        coerced []"#]]
    .assert_eq(&run(&t, json!({"limit": 9007199254740992.0_f64})));
    expect![[r#"
        /limit: 9223372036854775808 is out of range for a 64-bit integer
    "#]]
    .assert_eq(&run(
        &t,
        json!({"limit": -9223372036854775808.0_f64 * -1.0}),
    ));
    expect![[r#"
        /limit: -9223372036854775808 cannot be taken as an exact integer: written with a fraction or exponent, only whole numbers up to 2^53 are exact; send it as a plain integer
    "#]]
    .assert_eq(&run(&t, json!({"limit": -9223372036854775808.0_f64})));
}

/// The same through a schema as given (an upstream MCP tool's `inputSchema`): an integer a
/// parser turned into a float that is not exactly it (`99999999999999999999` → 1e20) is
/// refused naming the field — never passed on as another number — and an exact one arrives
/// as the integer.
#[test]
fn an_upstream_schema_gets_the_exact_integer_or_a_refusal() {
    let mut tool = sloppy().tool;
    tool.parameters.clear();
    tool.input_schema = Some(json!({"type": "object", "properties": {
        "limit": {"type": "integer"}, "ids": {"type": "array", "items": {"type": "integer"}}}}));
    let t = CompiledTool::new(tool, 1).expect("compiles");
    let parsed: Value = serde_json::from_str(r#"{"limit": 99999999999999999999}"#).expect("json");
    expect![[r#"
        /limit: 100000000000000000000 is out of range for a 64-bit integer
    "#]]
    .assert_eq(&run(&t, parsed));
    let parsed: Value = serde_json::from_str(r#"{"limit": -9223372036854775809}"#).expect("json");
    expect![[r#"
        /limit: -9223372036854775808 cannot be taken as an exact integer: written with a fraction or exponent, only whole numbers up to 2^53 are exact; send it as a plain integer
    "#]]
    .assert_eq(&run(&t, parsed));
    let parsed: Value = serde_json::from_str(r#"{"ids": [1, 1e30]}"#).expect("json");
    expect![[r#"
        /ids/1: 1000000000000000019884624838656 is out of range for a 64-bit integer
    "#]]
    .assert_eq(&run(&t, parsed));
    expect![[r#"
        ok {"limit":18446744073709551615,"ids":[2]}
        coerced []"#]]
    .assert_eq(&run(&t, json!({"limit": u64::MAX, "ids": [2.0]})));
}

#[test]
fn parse_step_errors() {
    let t = typed();
    expect![[r#"
        arguments are not valid JSON: expected `:` after a key at line 1 column 6
    "#]]
    .assert_eq(&run(&t, json!("{\"i\" 1}")));
    expect![[r#"
        arguments must be a JSON object, got an array
    "#]]
    .assert_eq(&run(&t, json!([1])));
    expect![[r#"
        ok {}
        coerced ["arguments: empty text→no arguments"]"#]]
    .assert_eq(&run(&t, json!("")));
    // A JSON string holding the object (sent encoded twice) is unwrapped once and noted.
    expect![[r#"
        ok {"i":1}
        coerced ["arguments: string→object"]"#]]
    .assert_eq(&run(&t, json!("\"{\\\"i\\\": 1}\"")));
    expect![[r#"
        ok {}
        coerced []"#]]
    .assert_eq(&run(&t, Value::Null));
}

#[test]
fn defaults_fill_and_every_error_is_reported_with_its_pointer() {
    let t = compiled(
        r#"
name: t
description: d
command: [x]
parameters:
  - {name: path, min_length: 1}
  - {name: timeout_ms, type: integer, minimum: 1, default: 1000}
  - {name: mode, type: enum, values: [fast, slow], default: fast}
  - {name: opts, type: object, required: false, properties: [{name: level, type: integer, default: 3}, {name: name}]}
"#,
    );
    expect![[r#"
        ok {"path":"a","opts":{"name":"x","level":3},"timeout_ms":1000,"mode":"fast"}
        coerced []"#]]
    .assert_eq(&run(&t, json!({"path": "a", "opts": {"name": "x"}})));
    expect![[r#"
        /verbose: unknown argument "verbose" (known: path, timeout_ms, mode, opts)
        /opts/extra: unknown property "extra" (known: level, name)
        /timeout_ms: "two thousand" is not an integer
        /mode: "medium" is not one of "fast", "slow"
        /opts/level: "-1.5" is not an integer
        /opts/name: missing required property "name"
        /path: missing required argument "path"
    "#]]
    .assert_eq(&run(&t, json!({"timeout_ms": "two thousand", "mode": "medium", "verbose": true, "opts": {"level": "-1.5", "extra": 1}})));
}

#[test]
fn strict_arguments_turn_coercion_off() {
    let t = compiled(
        "name: t\ndescription: d\ncommand: [x]\nstrict_arguments: true\nparameters: [{name: n, type: integer, required: false}]",
    );
    expect![[r#"
        /n: "5" is not an integer
    "#]]
    .assert_eq(&run(&t, json!({"n": "5"})));
    expect![[r#"
        /n: null is not an integer
    "#]]
    .assert_eq(&run(&t, json!({"n": null})));
}

#[test]
fn the_error_result_quotes_the_parameters() {
    let t = compiled(
        "name: t\ndescription: d\ncommand: [x]\nparameters: [{name: n, type: integer, description: How many.}, {name: tag, default: x}]",
    );
    let problems = t.prepare(json!({"n": "many"})).expect_err("invalid");
    let result = t.invalid_arguments(problems).to_json();
    expect![[r#"
        {
          "success": false,
          "error": {
            "kind": "invalid_arguments",
            "message": "invalid arguments for tool `t`: /n: \"many\" is not an integer. Parameters: n (integer, required): How many; tag (string, optional, default \"x\")",
            "details": [
              {
                "pointer": "/n",
                "message": "\"many\" is not an integer"
              }
            ]
          },
          "meta": {
            "tool": "t",
            "version": 1,
            "coerced": []
          }
        }"#]]
    .assert_eq(&serde_json::to_string_pretty(&result).expect("json"));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// Any i64 written as text becomes that integer, and is recorded.
    #[test]
    fn integer_text_round_trips(i in any::<i64>()) {
        let t = typed();
        let p = t.prepare(json!({"i": i.to_string()})).expect("valid");
        prop_assert_eq!(&p.arguments["i"], &json!(i));
        prop_assert_eq!(p.coerced, vec!["i: string→integer".to_string()]);
    }

    /// Any finite f64 written as text becomes that number.
    #[test]
    fn number_text_round_trips(f in any::<f64>().prop_filter("finite", |f| f.is_finite())) {
        let t = typed();
        let p = t.prepare(json!({"n": f.to_string()})).expect("valid");
        prop_assert_eq!(p.arguments["n"].as_f64(), Some(f));
    }

    /// A string parameter keeps any string exactly, however it looks.
    #[test]
    fn strings_stay_strings(s in ".*") {
        let t = typed();
        let p = t.prepare(json!({"s": s.clone()})).expect("valid");
        prop_assert_eq!(&p.arguments["s"], &json!(s));
        prop_assert!(p.coerced.is_empty());
    }

    /// Text that is not an integer never becomes one: it fails validation instead.
    #[test]
    fn non_integer_text_is_refused(s in "[^0-9+\\-\\s]+[0-9]*|[0-9]+[.eE][0-9]+|[0-9]+[a-z]+") {
        let t = typed();
        let result = t.prepare(json!({"i": s}));
        prop_assert!(result.is_err());
    }

    /// Booleans: only true/false in any case.
    #[test]
    fn boolean_text(s in "[A-Za-z01]{1,6}") {
        let t = typed();
        let lower = s.to_ascii_lowercase();
        let result = t.prepare(json!({"b": s}));
        match lower.as_str() {
            "true" | "false" => prop_assert_eq!(&result.expect("valid").arguments["b"], &json!(lower == "true")),
            _ => prop_assert!(result.is_err()),
        }
    }

    /// A JSON array of integers sent as text equals the same array sent as JSON.
    #[test]
    fn array_text_equals_array(items in proptest::collection::vec(any::<i32>(), 0..20)) {
        let t = typed();
        let as_text = t.prepare(json!({"a": serde_json::to_string(&items).expect("json")})).expect("valid");
        let as_json = t.prepare(json!({"a": items})).expect("valid");
        prop_assert_eq!(as_text.arguments, as_json.arguments);
        prop_assert_eq!(as_text.coerced, vec!["a: string→array".to_string()]);
    }
}

/// Finding 9 of the second hardening round: a huge bad argument gives a short problem, by
/// every route the pipeline reports through (coercion, the validator, unknown keys, workspace
/// paths), with the value's head and its size.
#[test]
fn huge_bad_values_are_quoted_short() {
    let digits = "9".repeat(2 << 20);
    let letters = "x".repeat(2 << 20);
    let tool = compiled(
        r#"
name: huge
description: d
script: {source: "x"}
parameters:
  - {name: i, type: integer, required: false}
  - {name: n, type: number, required: false}
  - {name: p, pattern: "^a", required: false}
  - {name: m, max_length: 3, required: false}
  - {name: w, workspace_path: true, required: false}
  - {name: a, type: array, items: integer, required: false}
"#,
    );
    let cases = [
        json!({"n": format!("{digits}.5")}),
        json!({"i": letters}),
        json!({"p": letters}),
        json!({"m": letters}),
        json!({"w": format!("/{letters}")}),
        json!({"a": format!("[{letters}")}),
        json!({ letters.clone(): 1 }),
    ];
    let problems = tool.prepare(json!({"i": digits})).expect_err("refused");
    assert_eq!(problems.len(), 1);
    assert!(
        problems[0].message.starts_with(&format!(
            "\"{}… (2097154 bytes) is out of range",
            "9".repeat(199)
        )),
        "{}",
        &problems[0].message[..300]
    );
    for args in cases {
        let problems = tool.prepare(args.clone()).expect_err("refused");
        let text: String = problems.iter().map(|p| format!("{p}\n")).collect();
        assert!(text.len() < 1500, "{} bytes: {}", text.len(), &text[..300]);
    }
}
