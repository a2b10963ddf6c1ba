//! JWT identity against a real `serve`: keys made by the test (RS256 with openssl, ES256 and
//! Ed25519 with ring), an OpenID configuration and a JWK set served by the test on 127.0.0.1
//! (counting how often the server fetches them), tokens signed with jsonwebtoken.
//! Every refusal is checked for its 401 and its `WWW-Authenticate` reason; the protected
//! resource metadata for its fields; toolset claims for what a caller sees.

mod common;

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use ring::rand::SystemRandom;
use ring::signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, Ed25519KeyPair, KeyPair};
use serde_json::{Value, json};

use common::{repo, serve};

const AUDIENCE: &str = "toolsmith-test";

fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

/// A signing key and its public JWK.
struct Key {
    alg: Algorithm,
    kid: String,
    encoding: EncodingKey,
    jwk: Value,
}

fn es256(kid: &str) -> Key {
    let rng = SystemRandom::new();
    let pkcs8 = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng).expect("p256");
    let pair = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, pkcs8.as_ref(), &rng)
        .expect("p256 pair");
    let point = pair.public_key().as_ref();
    Key {
        alg: Algorithm::ES256,
        kid: kid.into(),
        encoding: EncodingKey::from_ec_der(pkcs8.as_ref()),
        jwk: json!({"kty": "EC", "crv": "P-256", "x": b64(&point[1..33]), "y": b64(&point[33..65]), "kid": kid, "alg": "ES256", "use": "sig"}),
    }
}

fn ed25519(kid: &str) -> Key {
    let pkcs8 = Ed25519KeyPair::generate_pkcs8(&SystemRandom::new()).expect("ed25519");
    let pair = Ed25519KeyPair::from_pkcs8(pkcs8.as_ref()).expect("ed25519 pair");
    Key {
        alg: Algorithm::EdDSA,
        kid: kid.into(),
        encoding: EncodingKey::from_ed_der(pkcs8.as_ref()),
        jwk: json!({"kty": "OKP", "crv": "Ed25519", "x": b64(pair.public_key().as_ref()), "kid": kid}),
    }
}

/// An RSA key made by openssl (ring cannot make one).
fn rs256(kid: &str, dir: &std::path::Path) -> Key {
    let pem = dir.join(format!("{kid}.pem"));
    let der = dir.join(format!("{kid}.der"));
    let run = |args: &[&str]| {
        let o = std::process::Command::new("openssl")
            .args(args)
            .output()
            .expect("openssl (Debian's openssl package) runs");
        assert!(
            o.status.success(),
            "openssl {args:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        String::from_utf8_lossy(&o.stdout).into_owned()
    };
    let (pem_s, der_s) = (pem.to_str().expect("path"), der.to_str().expect("path"));
    run(&["genrsa", "-out", pem_s, "2048"]);
    run(&[
        "rsa",
        "-in",
        pem_s,
        "-outform",
        "DER",
        "-traditional",
        "-out",
        der_s,
    ]);
    let modulus = run(&["rsa", "-in", pem_s, "-noout", "-modulus"]);
    let hex = modulus.trim().trim_start_matches("Modulus=");
    let n: Vec<u8> = (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).expect("hex"))
        .collect();
    Key {
        alg: Algorithm::RS256,
        kid: kid.into(),
        encoding: EncodingKey::from_rsa_der(&std::fs::read(&der).expect("der")),
        jwk: json!({"kty": "RSA", "n": b64(&n), "e": "AQAB", "kid": kid, "alg": "RS256"}),
    }
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("clock")
        .as_secs()
}

/// The OpenID configuration and JWK set, served on 127.0.0.1; `fetches` counts JWKS reads.
struct Issuer {
    url: String,
    jwks: Arc<Mutex<Value>>,
    fetches: Arc<AtomicUsize>,
}

impl Issuer {
    fn start(keys: &[&Key]) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let url = format!("http://{}", listener.local_addr().expect("addr"));
        let jwks = Arc::new(Mutex::new(
            json!({"keys": keys.iter().map(|k| k.jwk.clone()).collect::<Vec<_>>()}),
        ));
        let fetches = Arc::new(AtomicUsize::new(0));
        let (j, f, u) = (jwks.clone(), fetches.clone(), url.clone());
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let mut reader = BufReader::new(&stream);
                let mut first = String::new();
                let _ = reader.read_line(&mut first);
                let mut line = String::new();
                while reader.read_line(&mut line).is_ok_and(|n| n > 2) {
                    line.clear();
                }
                let path = first
                    .split_whitespace()
                    .nth(1)
                    .unwrap_or_default()
                    .to_owned();
                let body = match path.as_str() {
                    "/.well-known/openid-configuration" => {
                        json!({"issuer": u, "jwks_uri": format!("{u}/jwks")}).to_string()
                    }
                    "/jwks" => {
                        f.fetch_add(1, Ordering::SeqCst);
                        j.lock().expect("jwks").to_string()
                    }
                    _ => "{}".into(),
                };
                let mut s = &stream;
                let _ = write!(
                    s,
                    "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                    body.len()
                );
            }
        });
        Self { url, jwks, fetches }
    }

    fn set_keys(&self, keys: &[&Key]) {
        *self.jwks.lock().expect("jwks") =
            json!({"keys": keys.iter().map(|k| k.jwk.clone()).collect::<Vec<_>>()});
    }

    fn fetches(&self) -> usize {
        self.fetches.load(Ordering::SeqCst)
    }

    /// A token signed with `key` for this issuer and the test audience, with `claims` over
    /// the defaults (valid for five minutes).
    fn token(&self, key: &Key, claims: Value) -> String {
        let mut body = json!({"iss": self.url, "aud": AUDIENCE, "sub": "alice", "iat": now(), "exp": now() + 300});
        for (k, v) in claims.as_object().expect("claims") {
            body[k] = v.clone();
        }
        let mut header = Header::new(key.alg);
        header.kid = Some(key.kid.clone());
        jsonwebtoken::encode(&header, &body, &key.encoding).expect("sign")
    }
}

/// One request with a bearer token: status, `WWW-Authenticate`, body.
fn send(method: &str, url: &str, token: Option<&str>, body: Option<Value>) -> (u16, String, Value) {
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(Duration::from_secs(30)))
        .build()
        .into();
    let mut req = ureq::http::Request::builder()
        .method(method)
        .uri(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2025-06-18");
    let local = token.is_none().then(|| common::local_token(url)).flatten();
    if let Some(t) = token.or(local.as_deref()) {
        req = req.header("authorization", format!("Bearer {t}"));
    }
    let req = req
        .body(body.map(|b| b.to_string()).unwrap_or_default().into_bytes())
        .expect("request");
    let mut resp = agent.run(req).expect("send");
    let challenge = resp
        .headers()
        .get("www-authenticate")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    let status = resp.status().as_u16();
    let text = resp.body_mut().read_to_string().unwrap_or_default();
    (
        status,
        challenge,
        serde_json::from_str(&text).unwrap_or(Value::String(text)),
    )
}

/// A refused token: 401, and the challenge names `invalid_token` and `reason`.
fn refused(base: &str, token: &str, reason: &str) {
    let (status, challenge, body) = send("GET", &format!("{base}/whoami"), Some(token), None);
    assert_eq!(status, 401, "{reason}: {body}");
    assert!(
        challenge.contains("error=\"invalid_token\"") && challenge.contains(reason),
        "expected {reason:?} in {challenge:?}"
    );
}

#[test]
fn jwts_from_the_issuer_are_verified_and_everything_else_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (es, ed, rs) = (es256("es-1"), ed25519("ed-1"), rs256("rs-1", dir.path()));
    let issuer = Issuer::start(&[&es, &ed, &rs]);
    let ws = dir.path().join("ws");
    std::fs::create_dir(&ws).expect("ws");
    let db = dir.path().join("r.db");
    let catalog = repo().join("examples/catalog.yaml");
    let (_serve, base, mcp) = serve(
        db.to_str().expect("db"),
        &ws,
        &[
            "--catalog",
            catalog.to_str().expect("catalog"),
            "--jwt-issuer",
            &issuer.url,
            "--jwt-audience",
            AUDIENCE,
            "--jwks-refresh-interval",
            "2",
            "--token",
            "ops:read=ops-secret-1",
        ],
    );
    let origin = base.trim_end_matches("/v1");
    assert_eq!(
        issuer.fetches(),
        1,
        "the keys are fetched at start, through the OpenID configuration"
    );

    // The protected resource metadata (RFC 9728), and a 401 from /mcp pointing at it.
    let (status, _, prm) = send(
        "GET",
        &format!("{origin}/.well-known/oauth-protected-resource/mcp"),
        None,
        None,
    );
    assert_eq!(status, 200, "{prm}");
    assert_eq!(prm["resource"], format!("{origin}/mcp"));
    assert_eq!(prm["authorization_servers"], json!([issuer.url]));
    assert_eq!(prm["bearer_methods_supported"], json!(["header"]));
    assert!(
        prm["scopes_supported"]
            .as_array()
            .is_some_and(|s| s.contains(&json!("toolsmith:call"))),
        "{prm}"
    );
    let (status, challenge, _) = send(
        "POST",
        &mcp,
        None,
        Some(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})),
    );
    assert_eq!(status, 401);
    assert!(
        challenge.contains(&format!(
            "resource_metadata=\"{origin}/.well-known/oauth-protected-resource/mcp\""
        )),
        "{challenge}"
    );
    assert!(
        !challenge.contains("error="),
        "no token is not an invalid token: {challenge}"
    );

    // Each algorithm, each role.
    let read = issuer.token(&es, json!({"toolsmith_role": "read"}));
    let (status, _, who) = send("GET", &format!("{base}/whoami"), Some(&read), None);
    assert_eq!(status, 200, "{who}");
    assert_eq!(
        (
            who["name"].as_str(),
            who["kind"].as_str(),
            who["role"].as_str()
        ),
        (Some("alice"), Some("jwt"), Some("read"))
    );
    let (status, _, body) = send(
        "POST",
        &format!("{base}/tools/word_stats/call"),
        Some(&read),
        Some(json!({"arguments": {"text": "a b"}})),
    );
    assert_eq!(status, 403, "a read role cannot call: {body}");
    let call = issuer.token(&ed, json!({"sub": "bob", "scope": "openid toolsmith:call"}));
    let (status, _, result) = send(
        "POST",
        &format!("{base}/tools/word_stats/call"),
        Some(&call),
        Some(json!({"arguments": {"text": "a b c"}})),
    );
    assert_eq!(status, 200, "{result}");
    assert_eq!(result["data"]["words"], 3, "{result}");
    let admin = issuer.token(&rs, json!({"sub": "carol", "scp": ["toolsmith:admin"]}));
    let (_, _, who) = send("GET", &format!("{base}/whoami"), Some(&admin), None);
    assert_eq!(who["role"], "admin", "{who}");
    let (_, _, runs) = send(
        "GET",
        &format!("{base}/runs?tool=word_stats"),
        Some(&admin),
        None,
    );
    assert_eq!(
        runs["runs"][0]["caller"], "jwt:bob",
        "the log records who called and how: {runs}"
    );
    // A static token works beside them.
    let (_, _, who) = send("GET", &format!("{base}/whoami"), Some("ops-secret-1"), None);
    assert_eq!(
        (who["kind"].as_str(), who["name"].as_str()),
        (Some("token"), Some("ops")),
        "{who}"
    );

    // Refusals, each with its reason.
    refused(
        &base,
        &issuer.token(&es, json!({"toolsmith_role": "read", "exp": now() - 600})),
        "expired",
    );
    refused(
        &base,
        &issuer.token(&es, json!({"toolsmith_role": "read", "nbf": now() + 600})),
        "not valid yet",
    );
    refused(
        &base,
        &issuer.token(
            &es,
            json!({"toolsmith_role": "read", "aud": "someone-else"}),
        ),
        "audience",
    );
    refused(
        &base,
        &issuer.token(
            &es,
            json!({"toolsmith_role": "read", "iss": "http://127.0.0.1:1"}),
        ),
        "issuer",
    );
    refused(
        &base,
        &issuer.token(&es, json!({"sub": "dave"})),
        "no toolsmith role",
    );
    let none = format!("{}.{}.", b64(br#"{"alg":"none","typ":"JWT"}"#), b64(json!({"iss": issuer.url, "aud": AUDIENCE, "sub": "x", "exp": now() + 60, "toolsmith_role": "admin"}).to_string().as_bytes()));
    refused(&base, &none, "none");
    // Algorithm confusion: HS256 signed with the public key as the secret.
    let mut header = Header::new(Algorithm::HS256);
    header.kid = Some("rs-1".into());
    let public = serde_json::to_vec(&rs.jwk).expect("jwk");
    let confused = jsonwebtoken::encode(&header, &json!({"iss": issuer.url, "aud": AUDIENCE, "sub": "x", "exp": now() + 60, "toolsmith_role": "admin"}), &EncodingKey::from_secret(&public)).expect("sign");
    refused(&base, &confused, "HS256");
    // A tampered payload.
    let mut parts: Vec<String> = read.split('.').map(str::to_owned).collect();
    parts[1] = b64(json!({"iss": issuer.url, "aud": AUDIENCE, "sub": "alice", "exp": now() + 60, "toolsmith_role": "admin"}).to_string().as_bytes());
    refused(&base, &parts.join("."), "signature");

    // An unknown key: the keys are fetched again once, then a flood fetches nothing more.
    std::thread::sleep(Duration::from_millis(2100));
    let stranger = es256("unknown-1");
    let before = issuer.fetches();
    refused(
        &base,
        &issuer.token(&stranger, json!({"toolsmith_role": "read"})),
        "unknown key",
    );
    assert_eq!(
        issuer.fetches(),
        before + 1,
        "an unknown kid makes one fetch"
    );
    for i in 0..20 {
        let other = Key {
            kid: format!("flood-{i}"),
            ..es256("x")
        };
        refused(
            &base,
            &issuer.token(&other, json!({"toolsmith_role": "read"})),
            "unknown key",
        );
    }
    assert_eq!(
        issuer.fetches(),
        before + 1,
        "a flood of unknown kids does not hammer the issuer"
    );

    // A rotated key: the issuer publishes a new one (and drops the old); tokens with the new
    // one are accepted after one fetch, the old one's refused.
    std::thread::sleep(Duration::from_millis(2100));
    let rotated = es256("es-2");
    issuer.set_keys(&[&rotated, &ed, &rs]);
    let (status, _, who) = send(
        "GET",
        &format!("{base}/whoami"),
        Some(&issuer.token(&rotated, json!({"toolsmith_role": "call"}))),
        None,
    );
    assert_eq!(status, 200, "a rotated key is fetched and accepted: {who}");
    refused(
        &base,
        &issuer.token(&es, json!({"toolsmith_role": "read"})),
        "unknown key",
    );

    // Toolset claims limit what the caller sees, over REST and MCP alike.
    let files = issuer.token(
        &ed,
        json!({"sub": "erin", "toolsmith_role": "call", "toolsmith_toolsets": ["files"]}),
    );
    let (_, _, listed) = send("GET", &format!("{base}/tools"), Some(&files), None);
    let names: Vec<&str> = listed["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert_eq!(
        names,
        ["find_files", "list_dir", "read_file", "search_text"],
        "{listed}"
    );
    let (_, _, who) = send("GET", &format!("{base}/whoami"), Some(&files), None);
    assert_eq!(who["toolsets"], json!(["files"]), "{who}");
    let (status, _, listed) = send(
        "POST",
        &mcp,
        Some(&files),
        Some(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}})),
    );
    assert_eq!(status, 200, "{listed}");
    let mut names: Vec<&str> = listed["result"]["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    names.sort_unstable();
    assert_eq!(
        names,
        ["find_files", "list_dir", "read_file", "search_text"],
        "{listed}"
    );
    let (status, _, answer) = send(
        "POST",
        &mcp,
        Some(&files),
        Some(
            json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "word_stats", "arguments": {"text": "x"}}}),
        ),
    );
    assert_eq!(status, 200);
    assert!(
        answer["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("unknown tool")),
        "a tool outside the claim is unknown: {answer}"
    );
    let (status, _, _) = send(
        "GET",
        &format!("{base}/tools/word_stats"),
        Some(&files),
        None,
    );
    assert_eq!(status, 404, "and 404 over REST, as if it did not exist");

    // A claim that is present but names no toolset limits the caller to nothing: an
    // identity provider mapping groups to toolsets gives a user with no groups no tool.
    for empty in [json!([]), json!(""), json!(","), Value::Null] {
        let token = issuer.token(
            &ed,
            json!({"sub": "eve", "toolsmith_role": "call", "toolsmith_toolsets": empty}),
        );
        let (status, _, listed) = send("GET", &format!("{base}/tools"), Some(&token), None);
        assert_eq!(status, 200, "{listed}");
        assert_eq!(listed["tools"], json!([]), "claim {empty}: {listed}");
        let (_, _, listed) = send(
            "POST",
            &mcp,
            Some(&token),
            Some(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}})),
        );
        assert_eq!(
            listed["result"]["tools"],
            json!([]),
            "claim {empty}: {listed}"
        );
        let (status, _, _) = send(
            "GET",
            &format!("{base}/tools/word_stats"),
            Some(&token),
            None,
        );
        assert_eq!(status, 404, "claim {empty}");
    }
    refused(
        &base,
        &issuer.token(
            &ed,
            json!({"sub": "eve", "toolsmith_role": "call", "toolsmith_toolsets": [1, "files"]}),
        ),
        "must list toolset names as text",
    );
    // A header naming critical extensions is refused (RFC 7515 §4.1.11), even well signed.
    let head = b64(json!({"alg": "EdDSA", "kid": ed.kid, "crit": ["exp"]})
        .to_string()
        .as_bytes());
    let body = b64(
        json!({"iss": issuer.url, "aud": AUDIENCE, "sub": "alice", "toolsmith_role": "call", "exp": now() + 300})
            .to_string()
            .as_bytes(),
    );
    let signature = jsonwebtoken::crypto::sign(
        format!("{head}.{body}").as_bytes(),
        &ed.encoding,
        Algorithm::EdDSA,
    )
    .expect("sign");
    refused(&base, &format!("{head}.{body}.{signature}"), "crit");
    let plain_head = b64(json!({"alg": "EdDSA", "kid": ed.kid})
        .to_string()
        .as_bytes());
    let signature = jsonwebtoken::crypto::sign(
        format!("{plain_head}.{body}").as_bytes(),
        &ed.encoding,
        Algorithm::EdDSA,
    )
    .expect("sign");
    let (status, _, who) = send(
        "GET",
        &format!("{base}/whoami"),
        Some(&format!("{plain_head}.{body}.{signature}")),
        None,
    );
    assert_eq!(status, 200, "the same token without `crit` is taken: {who}");
}

/// A caller limited to toolsets — by a static token and by a JWT — cannot tell a tool outside
/// them from one that does not exist: every route that takes a tool's name answers both
/// byte for byte alike (the name aside), `/v1/check` included, and `/metrics` (which names
/// every tool) is refused to them.
#[test]
fn a_limited_caller_cannot_tell_a_hidden_tool_from_a_missing_one() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ed = ed25519("ed-walk");
    let issuer = Issuer::start(&[&ed]);
    let ws = dir.path().join("ws");
    std::fs::create_dir(&ws).expect("ws");
    let db = dir.path().join("r.db");
    let catalog = repo().join("examples/catalog.yaml");
    let (_serve, base, mcp) = serve(
        db.to_str().expect("db"),
        &ws,
        &[
            "--catalog",
            catalog.to_str().expect("catalog"),
            "--jwt-issuer",
            &issuer.url,
            "--jwt-audience",
            AUDIENCE,
            "--token",
            "adm:admin=adm-secret-1",
            "--token",
            "lim:call@files=lim-secret-1",
        ],
    );
    // A tool outside `files`, with a stored secret, called once (so it has counts).
    let hidden = "hidden_sec";
    let (status, _, created) = send(
        "POST",
        &format!("{base}/tools"),
        Some("adm-secret-1"),
        Some(
            json!({"name": hidden, "description": "d", "command": ["true"],
            "config_schema": [{"name": "api_key", "secret": true}],
            "config": {"api_key": "HIDDEN-SECRET-VALUE"}}),
        ),
    );
    assert_eq!(status, 201, "{created}");
    let (status, _, called) = send(
        "POST",
        &format!("{base}/tools/{hidden}/call"),
        Some("adm-secret-1"),
        Some(json!({"arguments": {}, "confirm": true})),
    );
    assert_eq!(status, 200, "{called}");
    let missing = "missing_se";
    let jwt = issuer.token(
        &ed,
        json!({"sub": "lim", "toolsmith_role": "call", "toolsmith_toolsets": ["files"]}),
    );
    let draft = |name: &str| {
        json!({"definition": {"name": name, "description": "d", "command": ["true"],
            "config_schema": [{"name": "api_key", "secret": true}], "config": {"api_key": "***"}}})
    };
    let routes: Vec<(&str, &str, Option<Value>)> = vec![
        ("GET", "/tools/NAME", None),
        ("GET", "/tools/NAME/versions", None),
        ("GET", "/tools/NAME/versions/1", None),
        ("GET", "/tools/NAME/diff?from=1", None),
        (
            "POST",
            "/tools/NAME/validate",
            Some(json!({"arguments": {}})),
        ),
        ("POST", "/tools/NAME/plan", Some(json!({"arguments": {}}))),
        (
            "POST",
            "/tools/NAME/call",
            Some(json!({"arguments": {}, "confirm": true})),
        ),
        ("POST", "/tools/NAME/enable", None),
        ("POST", "/tools/NAME/disable", None),
        ("POST", "/tools/NAME/restore/1", None),
        (
            "PUT",
            "/tools/NAME",
            Some(json!({"name": "NAME", "description": "d", "command": ["true"]})),
        ),
        ("DELETE", "/tools/NAME", None),
        ("POST", "/check", Some(draft("NAME"))),
        ("GET", "/runs?tool=NAME", None),
        ("GET", "/export?format=openai&name=NAME", None),
    ];
    for (who, token) in [("static token", "lim-secret-1"), ("JWT", jwt.as_str())] {
        let answer = |name: &str, method: &str, path: &str, body: &Option<Value>| {
            let body = body
                .as_ref()
                .map(|b| serde_json::from_str(&b.to_string().replace("NAME", name)).expect("json"));
            let (status, _, answer) = send(
                method,
                &format!("{base}{}", path.replace("NAME", name)),
                Some(token),
                body,
            );
            (status, answer.to_string().replace(name, "NAME"))
        };
        for (method, path, body) in &routes {
            let seen = answer(hidden, method, path, body);
            assert_eq!(
                seen,
                answer(missing, method, path, body),
                "{who}: {method} {path} tells a hidden tool from a missing one"
            );
            assert!(
                !seen.1.contains("HIDDEN-SECRET"),
                "{who}: {method} {path}: {}",
                seen.1
            );
        }
        // The draft check of a hidden name is the check of a new tool: `***` keeps nothing.
        let (_, checked) = answer(hidden, "POST", "/check", &Some(draft("NAME")));
        assert!(
            checked.contains("a new tool has no stored secret"),
            "{who}: {checked}"
        );
        // MCP: calling it is calling an unknown tool.
        let mcp_call = |name: &str| {
            let (_, _, answer) = send(
                "POST",
                &mcp,
                Some(token),
                Some(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                    "params": {"name": name, "arguments": {}}})),
            );
            answer.to_string().replace(name, "NAME")
        };
        assert_eq!(mcp_call(hidden), mcp_call(missing), "{who}: MCP tools/call");
        // /metrics names every tool: refused, naming none.
        let origin = base.trim_end_matches("/v1");
        let (status, _, metrics) = send("GET", &format!("{origin}/metrics"), Some(token), None);
        assert_eq!(status, 403, "{who}: {metrics}");
        assert!(!metrics.to_string().contains(hidden), "{who}: {metrics}");
    }
    // An unlimited caller still reads it, hidden tool and all.
    let origin = base.trim_end_matches("/v1");
    let (status, _, metrics) = send(
        "GET",
        &format!("{origin}/metrics"),
        Some("adm-secret-1"),
        None,
    );
    assert_eq!(status, 200);
    assert!(metrics.to_string().contains(hidden), "{metrics}");
}
