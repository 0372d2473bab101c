use serde_json::{json, Value};

use super::*;
use crate::dialog::Dialog;
use crate::model_args::ModelArgs;

fn fields(hints: &InferenceHints, id: &str, parent: Option<&str>, args: &ModelArgs) -> Value {
    hints
        .request_fields(Some(id), parent, args)
        .expect("valid ids")
        .to_json()
}

#[test]
fn reference_example_dynamo_fork() {
    let hints = InferenceHints::builder()
        .profile(Profile::Dynamo)
        .priority(5)
        .speculative_prefill(true)
        .session_prefix("run-1")
        .build()
        .expect("valid");
    let args = ModelArgs::new().max_tokens(24);
    assert_eq!(
        fields(&hints, "retryid", Some("mainid"), &args),
        json!({"extra_headers": {"x-dynamo-session-id": "run-1:retryid",
                                 "x-dynamo-parent-session-id": "run-1:mainid"},
               "extra_body": {"nvext": {"agent_hints": {"priority": 5, "osl": 24, "speculative_prefill": true}}}})
    );
}

#[test]
fn vllm_flips_priority_in_i64_and_sends_salt() {
    let hints = InferenceHints::builder()
        .profile(Profile::Vllm)
        .priority(2)
        .cache_salt("tenant-a")
        .build()
        .expect("valid");
    assert_eq!(
        fields(&hints, "d", None, &ModelArgs::new()),
        json!({"extra_headers": {"x-session-id": "d"}, "extra_body": {"priority": -2, "cache_salt": "tenant-a"}})
    );
    let extreme = InferenceHints::builder()
        .profile(Profile::Vllm)
        .priority(i32::MIN)
        .build()
        .expect("valid");
    assert_eq!(
        fields(&extreme, "d", None, &ModelArgs::new())["extra_body"]["priority"],
        json!(2_147_483_648_i64)
    );
}

#[test]
fn sglang_and_openai_profiles() {
    let sglang = InferenceHints::builder()
        .profile(Profile::Sglang)
        .priority(3)
        .build()
        .expect("valid");
    assert_eq!(
        fields(&sglang, "c", Some("p"), &ModelArgs::new()),
        json!({"extra_headers": {"x-session-id": "c", "x-parent-session-id": "p"}, "extra_body": {"priority": 3}})
    );
    let openai = InferenceHints::default();
    assert_eq!(
        fields(&openai, "c", None, &ModelArgs::new().max_tokens(9)),
        json!({"extra_headers": {"x-session-id": "c"}})
    );
}

#[test]
fn unset_fields_are_not_sent_and_session_off_sends_nothing() {
    let bare = InferenceHints::for_profile(Profile::Dynamo);
    assert_eq!(
        fields(&bare, "d", None, &ModelArgs::new()),
        json!({"extra_headers": {"x-dynamo-session-id": "d"}})
    );
    let off = InferenceHints::builder()
        .profile(Profile::Dynamo)
        .session(false)
        .build()
        .expect("valid");
    assert_eq!(fields(&off, "d", Some("p"), &ModelArgs::new()), json!({}));
    assert_eq!(
        off.session_ids("d", Some("p")).expect("ok"),
        SessionIds::default()
    );
}

#[test]
fn osl_defaults_from_max_tokens_then_max_completion_tokens_and_explicit_wins() {
    let hints = InferenceHints::for_profile(Profile::Dynamo);
    let from_completion = ModelArgs::new().param("max_completion_tokens", 77);
    assert_eq!(
        fields(&hints, "d", None, &from_completion)["extra_body"]["nvext"]["agent_hints"],
        json!({"osl": 77})
    );
    let explicit = InferenceHints::builder()
        .profile(Profile::Dynamo)
        .osl(10)
        .build()
        .expect("valid");
    assert_eq!(
        fields(&explicit, "d", None, &ModelArgs::new().max_tokens(24))["extra_body"]["nvext"]
            ["agent_hints"],
        json!({"osl": 10})
    );
}

#[test]
fn dynamo_cache_salt_goes_to_nvext_and_strict_priority_to_agent_hints() {
    let hints = InferenceHints::builder()
        .profile(Profile::Dynamo)
        .strict_priority(2)
        .cache_salt("t1")
        .build()
        .expect("valid");
    assert_eq!(
        fields(&hints, "d", None, &ModelArgs::new())["extra_body"],
        json!({"nvext": {"agent_hints": {"strict_priority": 2}, "cache_salt": "t1"}})
    );
}

#[test]
fn fields_a_profile_cannot_send_are_rejected_with_the_profiles_that_can() {
    let err = InferenceHints::builder()
        .priority(1)
        .build()
        .expect_err("openai cannot send priority");
    assert_eq!(
        err.to_string(),
        "inference_hints.priority: the `openai` profile cannot send `priority`; profiles that can: dynamo, vllm, sglang"
    );
    let err = InferenceHints::builder()
        .profile(Profile::Vllm)
        .strict_priority(1)
        .build()
        .expect_err("vllm cannot send strict_priority");
    assert!(
        err.to_string().contains("profiles that can: dynamo"),
        "{err}"
    );
    for builder in [
        InferenceHints::builder()
            .profile(Profile::Sglang)
            .cache_salt("x"),
        InferenceHints::builder().profile(Profile::Vllm).osl(3),
        InferenceHints::builder().speculative_prefill(true),
    ] {
        assert!(matches!(
            builder.build(),
            Err(HintsError::NotSendable { .. })
        ));
    }
}

#[test]
fn unsafe_prefixes_salts_and_ids_are_rejected() {
    for prefix in ["run 1", "run\r\nx-evil: 1", "", "ü", &"p".repeat(224)] {
        let err = InferenceHints::builder()
            .session_prefix(prefix)
            .build()
            .expect_err(prefix);
        assert!(
            err.to_string()
                .starts_with("inference_hints.session_prefix"),
            "{err}"
        );
    }
    assert!(InferenceHints::builder()
        .session_prefix("p".repeat(223))
        .build()
        .is_ok());
    for salt in ["", "a/b", "a@b", "a\\b", "a\0b", &"s".repeat(129)] {
        assert!(
            InferenceHints::builder()
                .profile(Profile::Vllm)
                .cache_salt(salt)
                .build()
                .is_err(),
            "{salt:?}"
        );
    }
    assert!(InferenceHints::builder()
        .profile(Profile::Dynamo)
        .osl(0)
        .build()
        .is_err());
    let hints = InferenceHints::default();
    assert!(hints.session_ids("id\nx", None).is_err());
    assert!(hints.session_ids(&"x".repeat(257), None).is_err());
    assert!(hints.session_ids("ok", Some("bad id")).is_err());
}

#[test]
fn final_request_fields_are_dynamo_only() {
    let hints = InferenceHints::builder()
        .profile(Profile::Dynamo)
        .session_prefix("run-1")
        .build()
        .expect("valid");
    assert_eq!(
        hints.final_request_fields("abc").expect("dynamo").to_json(),
        json!({"extra_headers": {"x-dynamo-session-id": "run-1:abc", "x-dynamo-session-final": "true"}})
    );
    assert!(InferenceHints::default()
        .final_request_fields("abc")
        .is_err());
}

#[test]
fn family_mode_sends_the_root_id_and_no_parent() {
    let mut root = Dialog::new();
    let mut child = root.fork();
    let grandchild = child.fork();
    let family = InferenceHints::builder()
        .fork_session(ForkSession::Family)
        .build()
        .expect("valid");
    let sent = family
        .dialog_request_fields(&grandchild, &ModelArgs::new())
        .expect("valid");
    assert_eq!(
        sent.headers,
        vec![("x-session-id".to_owned(), root.id().to_string())]
    );
    let own = InferenceHints::default()
        .dialog_request_fields(&grandchild, &ModelArgs::new())
        .expect("valid");
    assert_eq!(
        own.header("x-session-id"),
        Some(grandchild.id().to_string().as_str())
    );
    assert_eq!(
        own.header("x-parent-session-id"),
        Some(child.id().to_string().as_str())
    );
}

#[test]
fn the_osl_sent_is_the_one_on_the_wire() {
    let args = ModelArgs::new().max_tokens(24);
    assert_eq!(
        InferenceHints::for_profile(Profile::Dynamo).osl_sent(&args),
        Some(24)
    );
    assert_eq!(
        InferenceHints::for_profile(Profile::OpenAi).osl_sent(&args),
        None
    );
    assert_eq!(
        InferenceHints::for_profile(Profile::Vllm).osl_sent(&args),
        None
    );
}

fn auto(profile: Profile) -> InferenceHints {
    InferenceHints::builder()
        .profile(profile)
        .priority(Priority::Auto)
        .build()
        .expect("auto is sendable")
}

fn lead_of_three_forks() -> Demand {
    Demand {
        waiting_turns: 4,
        waiting_branches: 0,
        class: RunClass::Interactive,
    }
}

#[test]
fn auto_priority_on_dynamo_is_an_interactive_tier_and_the_weight() {
    let hints = auto(Profile::Dynamo);
    assert!(hints.priority_is_auto());
    assert_eq!(hints.priority(), None, "no written number");
    let dialog = Dialog::new();
    let body = hints
        .dialog_request_fields_for(&dialog, &ModelArgs::new(), &lead_of_three_forks())
        .expect("fields")
        .body;
    assert_eq!(
        Value::Object(body),
        json!({"nvext": {"agent_hints": {"priority": 5, "strict_priority": 1}}})
    );
    // A batch run: no tier, so every interactive request goes first.
    let batch = Demand {
        class: RunClass::Batch,
        ..lead_of_three_forks()
    };
    assert_eq!(hints.priority_fields(&batch), (Some(5), None));
    // Without a demand, a lone interactive request.
    let lone = hints
        .dialog_request_fields(&dialog, &ModelArgs::new())
        .expect("fields");
    assert_eq!(
        lone.to_json()["extra_body"],
        json!({"nvext": {"agent_hints": {"priority": 1, "strict_priority": 1}}})
    );
}

#[test]
fn a_written_strict_priority_wins_over_the_computed_tier() {
    let hints = InferenceHints::builder()
        .profile(Profile::Dynamo)
        .priority(Priority::Auto)
        .strict_priority(3)
        .build()
        .expect("hints");
    assert_eq!(
        hints.priority_fields(&lead_of_three_forks()),
        (Some(5), Some(3))
    );
    let batch = Demand::of_class(RunClass::Batch);
    assert_eq!(hints.priority_fields(&batch), (Some(1), Some(3)));
}

#[test]
fn auto_priority_on_vllm_and_sglang_puts_the_tier_above_any_weight() {
    let demand = lead_of_three_forks();
    let busy_batch = Demand {
        waiting_turns: 5000,
        waiting_branches: 7,
        class: RunClass::Batch,
    };
    assert_eq!(busy_batch.weight(), MAX_WEIGHT);
    // vLLM runs lower values first.
    let vllm = auto(Profile::Vllm);
    assert_eq!(vllm.priority_fields(&demand), (Some(-1005), None));
    assert_eq!(vllm.priority_fields(&busy_batch), (Some(-999), None));
    let sglang = auto(Profile::Sglang);
    assert_eq!(sglang.priority_fields(&demand), (Some(1005), None));
    assert_eq!(sglang.priority_fields(&busy_batch), (Some(999), None));
    let waiting_join = Demand {
        waiting_turns: 1,
        waiting_branches: 2,
        class: RunClass::Interactive,
    };
    assert_eq!(
        waiting_join.weight(),
        4,
        "itself, the join, two finished branches"
    );
}

#[test]
fn a_written_number_keeps_its_meaning_whatever_the_demand() {
    let hints = InferenceHints::builder()
        .profile(Profile::Vllm)
        .priority(7)
        .build()
        .expect("hints");
    assert_eq!(
        hints.priority_fields(&lead_of_three_forks()),
        (Some(-7), None)
    );
    assert_eq!(hints.priority(), Some(7));
    assert!(!hints.priority_is_auto());
}

#[test]
fn auto_cannot_go_to_a_server_that_takes_no_priority() {
    let err = InferenceHints::builder()
        .priority(Priority::Auto)
        .build()
        .expect_err("openai takes no priority");
    assert!(err.to_string().contains("cannot send `priority`"), "{err}");
}

#[test]
fn priority_reads_a_number_or_auto_and_nothing_else() {
    let read = |text: &str| serde_json::from_str::<InferenceHintsBuilder>(text);
    let hints = read(r#"{"profile": "dynamo", "priority": "auto"}"#).expect("auto");
    assert!(hints.build().expect("valid").priority_is_auto());
    assert_eq!(
        read(r#"{"profile": "dynamo", "priority": 4}"#)
            .expect("number")
            .build()
            .expect("valid")
            .priority(),
        Some(4)
    );
    let err = read(r#"{"priority": "urgent"}"#).expect_err("not a priority");
    assert!(err.to_string().contains("an integer or `auto`"), "{err}");
    assert!(read(r#"{"priority": 3000000000}"#).is_err(), "beyond i32");
    assert_eq!(
        serde_json::to_value(InferenceHints::builder().priority(Priority::Auto)).expect("json"),
        json!({"priority": "auto"})
    );
}

/// Every logical value a table can carry, each field set.
fn every_value() -> HintValues {
    HintValues {
        priority: Some(5),
        strict_priority: Some(2),
        osl: Some(24),
        speculative_prefill: Some(true),
        cache_salt: Some("tenant-a".into()),
    }
}

/// `values` with only the fields `profile` can send.
fn sendable(profile: Profile, values: &HintValues) -> HintValues {
    let sends = |field| profile.sends(field);
    HintValues {
        priority: values.priority.filter(|_| sends(HintField::Priority)),
        strict_priority: values
            .strict_priority
            .filter(|_| sends(HintField::StrictPriority)),
        osl: values.osl.filter(|_| sends(HintField::Osl)),
        speculative_prefill: values
            .speculative_prefill
            .filter(|_| sends(HintField::SpeculativePrefill)),
        cache_salt: values
            .cache_salt
            .clone()
            .filter(|_| sends(HintField::CacheSalt)),
    }
}

#[test]
fn written_values_read_back_the_same_for_every_profile_and_field() {
    let all = every_value();
    let one_field: Vec<HintValues> = vec![
        HintValues {
            priority: Some(-7),
            ..HintValues::default()
        },
        HintValues {
            priority: Some(i64::from(i32::MIN)),
            ..HintValues::default()
        },
        HintValues {
            strict_priority: Some(1),
            ..HintValues::default()
        },
        HintValues {
            osl: Some(1),
            ..HintValues::default()
        },
        HintValues {
            speculative_prefill: Some(false),
            ..HintValues::default()
        },
        HintValues {
            cache_salt: Some("s".into()),
            ..HintValues::default()
        },
    ];
    for profile in Profile::ALL {
        let shape = profile.shape();
        for values in std::iter::once(&all).chain(&one_field) {
            let mut body = serde_json::Map::new();
            shape.write(&shape.to_wire(values), &mut body);
            let wire = shape.read_body(&body);
            assert_eq!(
                shape.from_wire(&wire),
                sendable(profile, values),
                "{profile}: {values:?} went out as {body:?}"
            );
            let nothing = sendable(profile, values) == HintValues::default();
            assert_eq!(body.is_empty(), nothing, "{profile}: {body:?}");
        }
    }
}

#[test]
fn each_profile_puts_each_hint_where_its_server_reads_it() {
    let body = |profile: Profile| {
        let shape = profile.shape();
        let mut body = serde_json::Map::new();
        shape.write(&shape.to_wire(&every_value()), &mut body);
        Value::Object(body)
    };
    assert_eq!(
        body(Profile::Dynamo),
        json!({"nvext": {"agent_hints": {"priority": 5, "strict_priority": 2, "osl": 24,
                                         "speculative_prefill": true},
                         "cache_salt": "tenant-a"}})
    );
    assert_eq!(
        body(Profile::Vllm),
        json!({"priority": -5, "cache_salt": "tenant-a"})
    );
    assert_eq!(body(Profile::Sglang), json!({"priority": 5}));
    assert_eq!(body(Profile::OpenAi), json!({}));
    let headers: Vec<(&str, &str, Option<&str>)> = Profile::ALL
        .iter()
        .map(|p| {
            let shape = p.shape();
            (
                shape.session_header(),
                shape.parent_header(),
                shape.final_header(),
            )
        })
        .collect();
    assert_eq!(
        headers,
        [
            (
                "x-dynamo-session-id",
                "x-dynamo-parent-session-id",
                Some("x-dynamo-session-final")
            ),
            ("x-session-id", "x-parent-session-id", None),
            ("x-session-id", "x-parent-session-id", None),
            ("x-session-id", "x-parent-session-id", None),
        ]
    );
    // What each field's error lists comes from the same tables.
    assert_eq!(
        HintField::Priority.profiles(),
        [Profile::Dynamo, Profile::Vllm, Profile::Sglang]
    );
    assert_eq!(
        HintField::CacheSalt.profiles(),
        [Profile::Dynamo, Profile::Vllm]
    );
    for field in [
        HintField::StrictPriority,
        HintField::Osl,
        HintField::SpeculativePrefill,
    ] {
        assert_eq!(field.profiles(), [Profile::Dynamo], "{field}");
    }
    for field in HintField::ALL {
        for profile in Profile::ALL {
            assert_eq!(
                field.profiles().contains(&profile),
                profile.shape().path(field).is_some(),
                "{field} {profile}"
            );
        }
    }
}

#[test]
fn recorded_values_are_sent_unchanged_to_the_same_profile_and_converted_to_another() {
    let vllm = WireHints {
        priority: Some(-5),
        cache_salt: Some("t".into()),
        ..WireHints::default()
    };
    let dynamo = Profile::Dynamo.shape();
    assert_eq!(
        Profile::Vllm.shape().reshape(&vllm, Some(Profile::Vllm)),
        vllm,
        "the same profile: as recorded"
    );
    assert_eq!(
        dynamo.reshape(&vllm, Some(Profile::Vllm)),
        WireHints {
            priority: Some(5),
            cache_salt: Some("t".into()),
            ..WireHints::default()
        }
    );
    assert_eq!(
        Profile::Sglang
            .shape()
            .reshape(&vllm, Some(Profile::Vllm))
            .priority,
        Some(5)
    );
    let from_dynamo = WireHints {
        priority: Some(5),
        strict_priority: Some(1),
        osl: Some(9),
        ..WireHints::default()
    };
    assert_eq!(
        Profile::Vllm
            .shape()
            .reshape(&from_dynamo, Some(Profile::Dynamo)),
        WireHints {
            priority: Some(-5),
            ..WireHints::default()
        },
        "what vLLM cannot send is left out"
    );
    assert_eq!(
        Profile::OpenAi
            .shape()
            .reshape(&from_dynamo, Some(Profile::Dynamo)),
        WireHints::default()
    );
    // Without the recording's profile the values are taken as they are.
    assert_eq!(Profile::Vllm.shape().reshape(&vllm, None), vllm);
    assert_eq!(dynamo.reshape(&vllm, None).priority, Some(-5));
    // Negation in i64: the most urgent vLLM value of an i32 hint converts without overflow.
    let extreme = WireHints {
        priority: Some(-i64::from(i32::MIN)),
        ..WireHints::default()
    };
    assert_eq!(
        dynamo.reshape(&extreme, Some(Profile::Vllm)).priority,
        Some(i64::from(i32::MIN))
    );
}

#[test]
fn a_body_of_an_unknown_profile_is_read_wherever_a_profile_puts_the_hint() {
    let read =
        |body: Value| WireHints::read_any(|path| body.pointer(&format!("/{}", path.join("/"))));
    assert_eq!(
        read(json!({"priority": -3, "nvext": {"agent_hints": {"priority": 4, "osl": 2}}})),
        WireHints {
            priority: Some(4),
            osl: Some(2),
            ..WireHints::default()
        },
        "Dynamo's place first, as the profiles are listed"
    );
    assert_eq!(read(json!({"priority": -3})).priority, Some(-3));
    assert_eq!(
        read(json!({"cache_salt": "x"})).cache_salt.as_deref(),
        Some("x")
    );
}
