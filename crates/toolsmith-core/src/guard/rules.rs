//! The scanner's text rules: each a regular expression over one model-facing text, with
//! the rule id and severity its findings carry and the published attack it comes from
//! (docs/guardrails.md lists them). Deterministic and compiled once; a text is first tested
//! against all of them at once ([`regex::RegexSet`]) and only the rules that matched are
//! searched for their spans.

use std::sync::LazyLock;

use regex::{Regex, RegexSet};

use super::Severity;

/// One text rule.
pub struct Rule {
    pub id: &'static str,
    pub severity: Severity,
    /// What the finding says, after the matched text.
    pub why: &'static str,
    pattern: &'static str,
}

/// The text rules, in the order their findings are reported.
pub static RULES: &[Rule] = &[
    Rule {
        id: "instruction-markup",
        severity: Severity::Hold,
        why: "markup that marks text as instructions for the model (Invariant Labs' `<IMPORTANT>` tool poisoning; chat-template tokens)",
        pattern: r"(?i)</?\s*(important|system|instructions?|secret|hidden|admin|assistant|human|user_?prompt|system_?prompt|context|rules?|critical|note[_ -]?(?:to|for)[_ -]?(?:ai|model|assistant|llm))\s*>|<\|(?:im_start|im_end|system|endoftext)\|>|\[/?INST\]|<<SYS>>|<!--",
    },
    Rule {
        id: "active-html",
        severity: Severity::Hold,
        why: "HTML that runs or fetches when rendered",
        pattern: r"(?i)<\s*(?:script|iframe|object|embed|svg|img|link|meta)\b|\bjavascript:|\bon(?:error|load|click|mouseover)\s*=",
    },
    Rule {
        id: "html",
        severity: Severity::Warn,
        why: "HTML markup (may hide text from a reviewer reading rendered output)",
        pattern: r"(?i)<\s*/?\s*(?:div|span|p|br|b|i|u|a|font|style|details|summary|table|tr|td|pre|code|em|strong|small|sup|sub|h[1-6])\b[^>]{0,200}>",
    },
    Rule {
        id: "model-instruction",
        severity: Severity::Hold,
        why: "an instruction addressed to the model, overriding or preceding what it was told (tool poisoning, Trail of Bits' line jumping)",
        pattern: r"(?ix)
            \b(?:ignore|disregard|forget|override)\s+(?:all\s+|any\s+)?(?:of\s+)?(?:the\s+|your\s+)?(?:previous|prior|above|earlier|preceding|other|system|original)\s+(?:instructions?|rules|directions|prompts?|guidelines|tools?)
          | \b(?:before|prior\s+to)\s+(?:using|calling|invoking|running|executing)\s+(?:any|every|all|each)\s+(?:other\s+)?tools?\b
          | \b(?:always|must|first)\s+(?:call|use|invoke|run)\s+this\s+tool\s+(?:first|before)\b
          | \bthis\s+(?:tool|instruction|description)\s+(?:overrides|supersedes|takes\s+precedence)
          | \b(?:takes?|has)\s+precedence\s+over\s+(?:all\s+|any\s+)?(?:other|previous|system|user)
          | \b(?:whenever|every\s+time|each\s+time)\s+you\s+(?:run|execute|call|use|invoke|send|write|answer|respond)
          | \b(?:the\s+)?(?:ai|assistant|llm|language\s+model|agent|model)\s+(?:must|should|needs?\s+to|has\s+to|is\s+required\s+to)\s+(?:always|never|first|secretly|also|now)?\s*(?:call|use|read|send|include|pass|ignore|run|execute|reply|respond|add|prefix)\b
          | \byou\s+(?:must|should)\s+(?:always|never|first|also)\s+(?:call|use|read|send|include|pass|run|execute|prefix|add|append)\b
          | \b(?:new|updated|real|actual|hidden)\s+instructions?\s*:
          | \bsecretly\b
        ",
    },
    Rule {
        id: "concealment",
        severity: Severity::Hold,
        why: "asks the model to keep something from the user (tool poisoning: \"do not mention this to the user\")",
        pattern: r"(?ix)
            \b(?:do\s+not|don'?t|never|must\s+not|should\s+not)\s+(?:tell|inform|notify|alert|mention|reveal|show|disclose|explain|let)\b[^.\n]{0,60}\b(?:users?|humans?|anyone|operators?)\b
          | \bwithout\s+(?:telling|informing|notifying|alerting|asking|showing|letting)\b[^.\n]{0,30}\b(?:users?|humans?|anyone)\b
          | \b(?:the\s+)?users?\s+(?:must|should|need|does|do)\s*(?:n'?t|\s+not)\s+(?:know|see|notice|be\s+told|find\s+out|be\s+aware)
          | \b(?:hide|conceal)\s+(?:this|it|that)\s+from\s+(?:the\s+)?users?
        ",
    },
    Rule {
        id: "coercion",
        severity: Severity::Hold,
        why: "threatens failure to make the model comply (tool poisoning: \"otherwise the tool will not work\")",
        pattern: r"(?ix)
            \botherwise\s+(?:the|this)\s+(?:tool|function|application|system|server)\s+(?:will|would)\s+(?:not|fail|crash|break|stop)
          | \b(?:the\s+)?(?:application|system|server)\s+will\s+crash\b
          | \ball\s+(?:the\s+)?data\s+will\s+be\s+lost\b
          | \bthis\s+is\s+(?:very\s+){2,}important\b
        ",
    },
    Rule {
        id: "secret-request",
        severity: Severity::Hold,
        why: "names a secret, key or configuration file for the model to read or pass on (tool poisoning, full-schema poisoning)",
        pattern: r"(?ix)
            ~/\.ssh\b | \.ssh/ | \bid[_\s-]?(?:rsa|dsa|ecdsa|ed25519)\b | \bauthorized_keys\b
          | \.aws/credentials | \.netrc\b | \.pgpass\b | \.npmrc\b | \.pypirc\b | \.git-credentials\b
          | \.docker/config\.json | \.kube/config | /etc/(?:passwd|shadow)\b
          | \bmcp\.json\b | \bclaude_desktop_config | ~/\.cursor\b | \.config/gh/hosts
          | \b(?:pass|send|include|attach|forward|leak|share|copy|upload|append|exfiltrate|post)\b[^.\n]{0,60}(?:\b(?:private\s+(?:ssh\s+)?keys?|ssh\s+keys?|api[\s_-]?keys?|credentials|passwords?|access\s+tokens?|bearer\s+tokens?|environment\s+variables|env\s+vars|config(?:uration)?\s+files?)\b|\.env\b)
          | \b(?:read|open|cat|load)\b[^.\n]{0,40}(?:\b(?:private\s+(?:ssh\s+)?keys?|ssh\s+keys?|credentials\s+files?|config(?:uration)?\s+files?)\b|\.env\b)
        ",
    },
    Rule {
        id: "conversation-request",
        severity: Severity::Hold,
        why: "asks for the conversation or the model's instructions (exfiltration of history and system prompt)",
        pattern: r"(?ix)
            \b(?:conversation|chat|message)\s+history\b
          | \b(?:entire|full|whole|complete|previous|prior|earlier)\s+(?:conversation|chat|transcript|messages)\b
          | \ball\s+(?:previous\s+|prior\s+)?messages\b
          | \b(?:your|the)\s+system\s+prompt\b
          | \b(?:your|the\s+model's|the\s+assistant's)\s+instructions\b
        ",
    },
    Rule {
        id: "exfiltration-url",
        severity: Severity::Hold,
        why: "a link the model is to fill or a client fetches on its own (markdown images, URLs with slots for data)",
        pattern: r"(?ix)
            !\[[^\]\n]{0,100}\]\(\s*https?://[^\s)]*(?:\{|\?[^\s)]*=)
          | https?://[^\s)\]]*[?&](?:data|content|secret|token|key|payload|history|conversation|messages|context)=\{
          | https?://[^\s)\]]*\{(?:data|content|secret|token|key|payload|history|conversation|messages|context|env|file)[^}\s]*\}
        ",
    },
    Rule {
        id: "encoded-blob",
        severity: Severity::Hold,
        why: "a long encoded run (base64) that a reviewer cannot read",
        pattern: r"[A-Za-z0-9+/]{80,}={0,2}|[A-Za-z0-9_-]{120,}",
    },
];

static SET: LazyLock<RegexSet> = LazyLock::new(|| {
    regex::RegexSetBuilder::new(RULES.iter().map(|r| r.pattern))
        .dfa_size_limit(64 << 20)
        .build()
        .expect("the rules compile")
});

static EACH: LazyLock<Vec<Regex>> = LazyLock::new(|| {
    RULES
        .iter()
        .map(|r| Regex::new(r.pattern).expect("the rules compile"))
        .collect()
});

/// Each match of each text rule in `text`: the rule and the byte range.
pub fn matches(text: &str) -> Vec<(&'static Rule, usize, usize)> {
    let mut found = Vec::new();
    for i in SET.matches(text).iter() {
        for m in EACH[i].find_iter(text) {
            if RULES[i].id == "encoded-blob" && !mixed(m.as_str()) {
                continue;
            }
            found.push((&RULES[i], m.start(), m.end()));
        }
    }
    found
}

/// Whether a long run mixes lower and upper case letters and digits, as encoded data does
/// (and an identifier or a word written long does not).
fn mixed(run: &str) -> bool {
    run.bytes().any(|b| b.is_ascii_lowercase())
        && run.bytes().any(|b| b.is_ascii_uppercase())
        && run.bytes().any(|b| b.is_ascii_digit())
}

/// Upstream parameter names that exist to carry what a poisoned description asks for (the
/// `sidenote` of Invariant Labs' example): held.
pub const SMUGGLING_PARAMETERS: &[&str] = &[
    "sidenote",
    "side_note",
    "sideNote",
    "hidden",
    "hidden_note",
    "internal_note",
    "secret_note",
    "exfil",
    "debug_info",
    "extra_context",
    "conversation",
    "history",
    "conversation_history",
    "chat_history",
    "previous_messages",
    "system_prompt",
    "chain_of_thought",
    "tools_list",
];
