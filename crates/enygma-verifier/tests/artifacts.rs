//! Round trips, field orders and rejection of malformed inputs, on toy keys and proofs.

#[path = "../toy/circuit.rs"]
mod toy;

use std::sync::OnceLock;

use ark_bn254::{Bn254, Fq, Fq2, Fr, G1Affine, G2Affine};
use ark_ec::{AffineRepr, CurveGroup};
use ark_ff::{Field, One, PrimeField, Zero};
use ark_groth16::{Proof, VerifyingKey};
use enygma_verifier::snarkjs::{self, SnarkjsProof, SnarkjsVerificationKey};
use enygma_verifier::{
    arkworks, export_vk, parse_proof_response, solidity, verify_proof, verify_response, Error,
    ProofResponse, VkFormat, BASE_FIELD_MODULUS, SCALAR_FIELD_MODULUS,
};
use serde_json::{json, Value};

const N: usize = 3;

struct Fixture {
    vk: VerifyingKey<Bn254>,
    proof: Proof<Bn254>,
    inputs: Vec<Fr>,
}

fn fixture() -> &'static Fixture {
    static F: OnceLock<Fixture> = OnceLock::new();
    F.get_or_init(|| {
        let (pk, vk) = toy::toy_setup(N, 7);
        let (proof, inputs) = toy::toy_prove(&pk, N, 8);
        Fixture { vk, proof, inputs }
    })
}

fn response_json() -> String {
    let f = fixture();
    ProofResponse::from_proof(&f.proof, &f.inputs).to_json()
}

fn response_value() -> Value {
    serde_json::from_str(&response_json()).unwrap()
}

fn parse_value(v: &Value) -> Result<(Proof<Bn254>, Vec<Fr>), Error> {
    parse_proof_response(&v.to_string())
}

fn dec<F: PrimeField>(x: F) -> String {
    x.into_bigint().to_string()
}

// ---------------------------------------------------------------- native verification

#[test]
fn toy_proof_verifies_and_tampering_fails() {
    let f = fixture();
    assert_eq!(verify_proof(&f.vk, &f.proof, &f.inputs), Ok(true));
    // Each public input counts (the inputs are combined in one MSM): changing any one of them,
    // the first and the last included, fails.
    for i in 0..f.inputs.len() {
        let mut bad = f.inputs.clone();
        bad[i] += Fr::one();
        assert_eq!(verify_proof(&f.vk, &f.proof, &bad), Ok(false), "input {i}");
    }
    let swapped = Proof {
        a: f.proof.c,
        b: f.proof.b,
        c: f.proof.a,
    };
    assert_eq!(verify_proof(&f.vk, &swapped, &f.inputs), Ok(false));
}

#[test]
fn wrong_input_count_is_an_error_not_a_silent_pass() {
    let f = fixture();
    let short = &f.inputs[..N - 1];
    assert_eq!(
        verify_proof(&f.vk, &f.proof, short),
        Err(Error::PublicInputCount {
            expected: N,
            got: N - 1
        })
    );
    let mut long = f.inputs.clone();
    long.push(Fr::zero());
    assert_eq!(
        verify_proof(&f.vk, &f.proof, &long),
        Err(Error::PublicInputCount {
            expected: N,
            got: N + 1
        })
    );
}

#[test]
fn verify_response_parses_and_verifies() {
    let f = fixture();
    let pvk = ark_groth16::prepare_verifying_key(&f.vk);
    assert_eq!(verify_response(&pvk, &response_json()), Ok(true));
    let mut v = response_value();
    v["public_signal"][0] = json!(dec(f.inputs[0] + Fr::one()));
    assert_eq!(verify_response(&pvk, &v.to_string()), Ok(false));
    assert!(verify_response(&pvk, "{}").is_err());
}

// ---------------------------------------------------------------- reference response

#[test]
fn response_round_trip() {
    let f = fixture();
    let json = response_json();
    let (proof, inputs) = parse_proof_response(&json).unwrap();
    assert_eq!(proof, f.proof);
    assert_eq!(inputs, f.inputs);
    assert_eq!(ProofResponse::from_proof(&proof, &inputs).to_json(), json);
    // The field order of the JSON object is the reference's.
    let keys: Vec<&str> = ["\"pi_a\"", "\"pi_b\"", "\"pi_c\"", "\"public_signal\""].to_vec();
    let pos: Vec<usize> = keys.iter().map(|k| json.find(k).unwrap()).collect();
    assert!(pos.windows(2).all(|w| w[0] < w[1]), "{json}");
}

#[test]
fn response_g2_is_c1_then_c0() {
    let f = fixture();
    let (x, y) = f.proof.b.xy().unwrap();
    let v = response_value();
    assert_eq!(
        v["pi_b"],
        json!([[dec(x.c1), dec(x.c0)], [dec(y.c1), dec(y.c0)]])
    );
    let (ax, ay) = f.proof.a.xy().unwrap();
    assert_eq!(v["pi_a"], json!([dec(ax), dec(ay)]));

    // The snarkjs order, (c0, c1), is not accepted as the response order.
    let mut swapped = v.clone();
    swapped["pi_b"] = json!([[dec(x.c0), dec(x.c1)], [dec(y.c0), dec(y.c1)]]);
    let e = parse_value(&swapped).unwrap_err();
    assert!(
        matches!(e, Error::NotOnCurve { ref field } | Error::NotInSubgroup { ref field } if field == "pi_b"),
        "{e:?}"
    );
}

#[test]
fn response_rejects_bad_shapes() {
    let good = response_value();
    let mut cases: Vec<(&str, Value)> = Vec::new();
    for field in ["pi_a", "pi_b", "pi_c", "public_signal"] {
        let mut v = good.clone();
        v.as_object_mut().unwrap().remove(field);
        cases.push(("missing field", v));
    }
    let mut v = good.clone();
    v["extra"] = json!(1);
    cases.push(("unknown field", v));
    let mut v = good.clone();
    v["pi_a"] = json!([1, 2]);
    cases.push(("numbers instead of strings", v));
    let mut v = good.clone();
    v["pi_a"] = json!([good["pi_a"][0], good["pi_a"][1], "1"]);
    cases.push(("projective pi_a", v));
    let mut v = good.clone();
    v["pi_b"] = json!([good["pi_b"][0], good["pi_b"][1], ["1", "0"]]);
    cases.push(("projective pi_b", v));
    let mut v = good.clone();
    v["pi_b"][0] = json!([good["pi_b"][0][0]]);
    cases.push(("short Fq2", v));
    let mut v = good.clone();
    v["public_signal"] = json!("1");
    cases.push(("public_signal not an array", v));
    let mut v = good.clone();
    v["public_signal"][0] = json!(5);
    cases.push(("public input as a number", v));
    cases.push(("array instead of object", json!([])));
    cases.push(("null", Value::Null));
    for (what, v) in cases {
        let e = parse_value(&v).unwrap_err();
        assert!(matches!(e, Error::Json(_)), "{what}: {e:?}");
    }
    for text in ["", "{", "not json", "{\"pi_a\":[\"1\",\"2\"]} trailing"] {
        assert!(
            matches!(parse_proof_response(text), Err(Error::Json(_))),
            "{text:?}"
        );
    }
}

#[test]
fn response_rejects_non_canonical_numbers() {
    let good = response_value();
    let f = fixture();
    let a0 = good["pi_a"][0].as_str().unwrap().to_string();
    let x = dec(f.inputs[0]);
    let cases: Vec<(&str, &str, Value)> = vec![
        (
            "leading zero in a coordinate",
            "pi_a[0]",
            json!(format!("0{a0}")),
        ),
        ("sign", "pi_a[0]", json!(format!("+{a0}"))),
        ("hex", "pi_a[0]", json!("0x1")),
        ("whitespace", "pi_a[0]", json!(format!(" {a0}"))),
        ("empty", "pi_a[0]", json!("")),
        ("x + p", "pi_a[0]", json!(add_p(&a0))),
        ("p itself", "pi_a[0]", json!(BASE_FIELD_MODULUS)),
        ("80 digits", "pi_a[0]", json!("9".repeat(80))),
        (
            "public input r",
            "public_signal[0]",
            json!(SCALAR_FIELD_MODULUS),
        ),
        ("public input x + r", "public_signal[0]", json!(add_r(&x))),
        ("public input -1", "public_signal[0]", json!("-1")),
        (
            "public input leading zero",
            "public_signal[0]",
            json!(format!("0{x}")),
        ),
        (
            "public input decimal point",
            "public_signal[0]",
            json!("1.0"),
        ),
    ];
    for (what, path, value) in cases {
        let mut v = good.clone();
        set_path(&mut v, path, value);
        let e = parse_value(&v).unwrap_err();
        match &e {
            Error::InvalidNumber { field, .. } => assert_eq!(field, path, "{what}"),
            other => panic!("{what}: {other:?}"),
        }
    }
}

fn set_path(v: &mut Value, path: &str, value: Value) {
    let (name, rest) = path.split_once('[').unwrap();
    let i: usize = rest.trim_end_matches(']').parse().unwrap();
    v[name][i] = value;
}

/// x + p as a decimal string (x < p).
fn add_p(x: &str) -> String {
    add_decimal(x, BASE_FIELD_MODULUS)
}

/// x + r as a decimal string.
fn add_r(x: &str) -> String {
    add_decimal(x, SCALAR_FIELD_MODULUS)
}

fn add_decimal(a: &str, b: &str) -> String {
    let (a, b): (Vec<u32>, Vec<u32>) = (
        a.bytes().rev().map(|c| u32::from(c - b'0')).collect(),
        b.bytes().rev().map(|c| u32::from(c - b'0')).collect(),
    );
    let mut out = Vec::new();
    let mut carry = 0;
    for i in 0..a.len().max(b.len()) {
        let s = a.get(i).unwrap_or(&0) + b.get(i).unwrap_or(&0) + carry;
        out.push(s % 10);
        carry = s / 10;
    }
    if carry > 0 {
        out.push(carry);
    }
    out.iter()
        .rev()
        .map(|d| char::from(b'0' + *d as u8))
        .collect()
}

#[test]
fn response_rejects_points_off_the_curve_and_outside_the_subgroup() {
    let good = response_value();
    let f = fixture();

    // A with y + 1: not on the curve.
    let (ax, ay) = f.proof.a.xy().unwrap();
    let mut v = good.clone();
    v["pi_a"][1] = json!(dec(ay + Fq::one()));
    assert_eq!(
        parse_value(&v).unwrap_err(),
        Error::NotOnCurve {
            field: "pi_a".into()
        }
    );
    let _ = ax;

    // C with y + 1.
    let (_, cy) = f.proof.c.xy().unwrap();
    let mut v = good.clone();
    v["pi_c"][1] = json!(dec(cy + Fq::one()));
    assert_eq!(
        parse_value(&v).unwrap_err(),
        Error::NotOnCurve {
            field: "pi_c".into()
        }
    );

    // B on the twist but outside the r-torsion subgroup.
    let p = twist_point_outside_subgroup();
    let (x, y) = p.xy().unwrap();
    let mut v = good.clone();
    v["pi_b"] = json!([[dec(x.c1), dec(x.c0)], [dec(y.c1), dec(y.c0)]]);
    assert_eq!(
        parse_value(&v).unwrap_err(),
        Error::NotInSubgroup {
            field: "pi_b".into()
        }
    );
}

/// Finds a point on the BN254 twist y^2 = x^3 + b' that is not in the order-r subgroup.
fn twist_point_outside_subgroup() -> G2Affine {
    let b = <ark_bn254::g2::Config as ark_ec::short_weierstrass::SWCurveConfig>::COEFF_B;
    let mut i = 1u64;
    loop {
        let x = Fq2::new(Fq::from(i), Fq::one());
        if let Some(y) = (x.square() * x + b).sqrt() {
            let p = G2Affine::new_unchecked(x, y);
            assert!(p.is_on_curve());
            if !p.is_in_correct_subgroup_assuming_on_curve() {
                return p;
            }
        }
        i += 1;
    }
}

#[test]
fn response_accepts_the_evm_encoding_of_infinity() {
    let v = json!({
        "pi_a": ["0", "0"],
        "pi_b": [["0", "0"], ["0", "0"]],
        "pi_c": ["0", "0"],
        "public_signal": [],
    });
    let (proof, inputs) = parse_value(&v).unwrap();
    assert!(proof.a.is_zero() && proof.b.is_zero() && proof.c.is_zero());
    assert!(inputs.is_empty());
    assert_eq!(
        ProofResponse::from_proof(&proof, &inputs).to_json(),
        v.to_string()
    );
    // (0, 1) is neither a point nor the EVM's infinity.
    let mut bad = v.clone();
    bad["pi_a"] = json!(["0", "1"]);
    assert!(matches!(parse_value(&bad), Err(Error::NotOnCurve { .. })));
}

// ---------------------------------------------------------------- snarkjs

#[test]
fn snarkjs_vk_layout() {
    let f = fixture();
    let v: Value = serde_json::from_str(&snarkjs::vk_to_snarkjs_json(&f.vk)).unwrap();
    assert_eq!(v["protocol"], "groth16");
    assert_eq!(v["curve"], "bn128");
    assert_eq!(v["nPublic"], json!(N));
    let (ax, ay) = f.vk.alpha_g1.xy().unwrap();
    assert_eq!(v["vk_alpha_1"], json!([dec(ax), dec(ay), "1"]));
    for (name, p) in [
        ("vk_beta_2", f.vk.beta_g2),
        ("vk_gamma_2", f.vk.gamma_g2),
        ("vk_delta_2", f.vk.delta_g2),
    ] {
        let (x, y) = p.xy().unwrap();
        assert_eq!(
            v[name],
            json!([[dec(x.c0), dec(x.c1)], [dec(y.c0), dec(y.c1)], ["1", "0"]]),
            "{name}"
        );
    }
    let ic = v["IC"].as_array().unwrap();
    assert_eq!(ic.len(), N + 1);
    for (j, p) in f.vk.gamma_abc_g1.iter().enumerate() {
        let (x, y) = p.xy().unwrap();
        assert_eq!(ic[j], json!([dec(x), dec(y), "1"]));
    }
    // e(alpha, beta), Fq12 = Fq6[w] over Fq6 = Fq2[v], all coefficients [c0, c1].
    let e = snarkjs::alphabeta(&f.vk);
    let ab = &v["vk_alphabeta_12"];
    assert_eq!(ab[0][0], json!([dec(e.c0.c0.c0), dec(e.c0.c0.c1)]));
    assert_eq!(ab[0][2], json!([dec(e.c0.c2.c0), dec(e.c0.c2.c1)]));
    assert_eq!(ab[1][1], json!([dec(e.c1.c1.c0), dec(e.c1.c1.c1)]));
    // The key order and the indentation are snarkjs's (JSON.stringify(vk, null, 1)).
    let text = snarkjs::vk_to_snarkjs_json(&f.vk);
    assert!(text.starts_with("{\n \"protocol\": \"groth16\",\n \"curve\": \"bn128\",\n \"nPublic\": 3,\n \"vk_alpha_1\": [\n  \""), "{text}");
    assert!(
        text.ends_with("]\n}"),
        "no trailing newline, as snarkjs writes it"
    );
    let order = [
        "protocol",
        "curve",
        "nPublic",
        "vk_alpha_1",
        "vk_beta_2",
        "vk_gamma_2",
        "vk_delta_2",
        "vk_alphabeta_12",
        "IC",
    ];
    let pos: Vec<usize> = order
        .iter()
        .map(|k| text.find(&format!("\"{k}\"")).unwrap())
        .collect();
    assert!(pos.windows(2).all(|w| w[0] < w[1]));
}

#[test]
fn snarkjs_vk_round_trip_and_rejections() {
    let f = fixture();
    let text = snarkjs::vk_to_snarkjs_json(&f.vk);
    assert_eq!(snarkjs::vk_from_snarkjs_json(&text).unwrap(), f.vk);

    let good: SnarkjsVerificationKey = serde_json::from_str(&text).unwrap();
    let mut k = good.clone();
    k.n_public += 1;
    assert!(matches!(
        snarkjs::vk_from_snarkjs(&k),
        Err(Error::InvalidKey(_))
    ));
    let mut k = good.clone();
    k.protocol = "plonk".into();
    assert!(matches!(
        snarkjs::vk_from_snarkjs(&k),
        Err(Error::InvalidFormat(_))
    ));
    let mut k = good.clone();
    k.curve = "bls12381".into();
    assert!(matches!(
        snarkjs::vk_from_snarkjs(&k),
        Err(Error::InvalidFormat(_))
    ));
    let mut k = good.clone();
    k.vk_alphabeta_12[0][0][0] = "1".into();
    assert!(matches!(
        snarkjs::vk_from_snarkjs(&k),
        Err(Error::InvalidKey(_))
    ));
    let mut k = good.clone();
    k.vk_alpha_1[2] = "2".into();
    assert!(matches!(
        snarkjs::vk_from_snarkjs(&k),
        Err(Error::InvalidNumber { .. })
    ));
    let mut k = good.clone();
    k.vk_beta_2[2] = ["0".into(), "1".into()];
    assert!(matches!(
        snarkjs::vk_from_snarkjs(&k),
        Err(Error::InvalidNumber { .. })
    ));
    // G2 in the EVM order (c1, c0) is not a snarkjs key.
    let mut k = good.clone();
    k.vk_delta_2[0].swap(0, 1);
    k.vk_delta_2[1].swap(0, 1);
    assert!(matches!(
        snarkjs::vk_from_snarkjs(&k),
        Err(Error::NotOnCurve { .. } | Error::NotInSubgroup { .. })
    ));
    let mut k = good.clone();
    k.ic[1][0] = format!("0{}", k.ic[1][0]);
    assert!(matches!(
        snarkjs::vk_from_snarkjs(&k),
        Err(Error::InvalidNumber { .. })
    ));
}

#[test]
fn snarkjs_proof_layout_and_round_trip() {
    let f = fixture();
    let resp = response_json();
    let files = snarkjs::response_to_snarkjs(&resp).unwrap();
    let p: Value = serde_json::from_str(&files.proof_json).unwrap();
    let r = response_value();
    // pi_b: each pair reversed, then the projective ["1", "0"].
    assert_eq!(
        p["pi_b"],
        json!([
            [r["pi_b"][0][1], r["pi_b"][0][0]],
            [r["pi_b"][1][1], r["pi_b"][1][0]],
            ["1", "0"]
        ])
    );
    assert_eq!(p["pi_a"], json!([r["pi_a"][0], r["pi_a"][1], "1"]));
    assert_eq!(p["pi_c"], json!([r["pi_c"][0], r["pi_c"][1], "1"]));
    assert_eq!(p["protocol"], "groth16");
    assert_eq!(p["curve"], "bn128");
    let order = ["pi_a", "pi_b", "pi_c", "protocol", "curve"];
    let pos: Vec<usize> = order
        .iter()
        .map(|k| files.proof_json.find(&format!("\"{k}\"")).unwrap())
        .collect();
    assert!(pos.windows(2).all(|w| w[0] < w[1]));
    let public: Value = serde_json::from_str(&files.public_json).unwrap();
    assert_eq!(public, r["public_signal"]);

    // And back.
    let back = snarkjs::snarkjs_to_response(&files.proof_json, &files.public_json).unwrap();
    assert_eq!(back.to_json(), resp);
    let sp: SnarkjsProof = serde_json::from_str(&files.proof_json).unwrap();
    let (proof, inputs) = snarkjs::proof_from_snarkjs(&sp, &back.public_signal).unwrap();
    assert_eq!((proof, inputs), (f.proof.clone(), f.inputs.clone()));
}

#[test]
fn snarkjs_export_rejects_bad_responses() {
    let mut v = response_value();
    v["public_signal"][0] = json!(SCALAR_FIELD_MODULUS);
    assert!(snarkjs::response_to_snarkjs(&v.to_string()).is_err());
    assert!(snarkjs::response_to_snarkjs("{}").is_err());
}

#[test]
fn snarkjs_infinity_is_projective_zero() {
    let proof = Proof::<Bn254> {
        a: G1Affine::zero(),
        b: G2Affine::zero(),
        c: G1Affine::zero(),
    };
    let p = snarkjs::proof_to_snarkjs(&proof);
    assert_eq!(p.pi_a, ["0", "1", "0"].map(String::from));
    assert_eq!(
        serde_json::to_value(&p.pi_b).unwrap(),
        json!([["0", "0"], ["1", "0"], ["0", "0"]])
    );
    assert_eq!(snarkjs::proof_from_snarkjs(&p, &[]).unwrap().0, proof);
    // The EVM's (0, 0) is not snarkjs's infinity.
    let mut bad = p.clone();
    bad.pi_a = ["0", "0", "1"].map(String::from);
    assert!(snarkjs::proof_from_snarkjs(&bad, &[]).is_err());
}

// ---------------------------------------------------------------- arkworks

#[test]
fn arkworks_round_trip_and_rejections() {
    let f = fixture();
    let bytes = arkworks::vk_to_bytes(&f.vk);
    // alpha (32) + beta, gamma, delta (3 x 64) + length (8) + IC (32 each), compressed.
    assert_eq!(bytes.len(), 32 + 3 * 64 + 8 + 32 * (N + 1));
    assert_eq!(arkworks::vk_from_bytes(&bytes).unwrap(), f.vk);
    let hex = arkworks::vk_to_hex(&f.vk);
    assert_eq!(hex.len(), 2 * bytes.len());
    assert!(hex
        .bytes()
        .all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase()));
    assert_eq!(arkworks::vk_from_hex(&format!("{hex}\n")).unwrap(), f.vk);
    assert_eq!(
        arkworks::vk_from_hex(&format!("0x{}", hex.to_uppercase())).unwrap(),
        f.vk
    );

    let mut long = bytes.clone();
    long.push(0);
    assert!(matches!(
        arkworks::vk_from_bytes(&long),
        Err(Error::Serialization(_))
    ));
    assert!(arkworks::vk_from_bytes(&bytes[..bytes.len() - 1]).is_err());
    assert!(arkworks::vk_from_hex(&hex[1..]).is_err());
    assert!(arkworks::vk_from_hex(&format!("{}zz", &hex[2..])).is_err());
    // A flipped bit in alpha's x no longer decodes to a valid point (or decodes to another key).
    let mut flipped = bytes.clone();
    flipped[0] ^= 1;
    assert_ne!(arkworks::vk_from_bytes(&flipped).ok(), Some(f.vk.clone()));

    let pb = arkworks::proof_to_bytes(&f.proof);
    assert_eq!(pb.len(), 128);
    assert_eq!(arkworks::proof_from_bytes(&pb).unwrap(), f.proof);
    assert!(arkworks::proof_from_bytes(&pb[..127]).is_err());
}

// ---------------------------------------------------------------- Solidity

#[test]
fn solidity_contract_shape() {
    let f = fixture();
    let src = solidity::solidity_verifier(&f.vk, "ToyVerifier").unwrap();
    assert!(src.contains("contract ToyVerifier {"));
    assert!(src.contains("pragma solidity"));
    assert!(src.contains(&format!("uint256 public constant PUBLIC_INPUTS = {N};")));
    assert!(src.contains(&format!("uint256[{N}] calldata input")));
    assert!(src.contains("uint256[2][2] calldata b"));
    assert!(src.contains(&format!(
        "uint256 internal constant SCALAR_FIELD = {SCALAR_FIELD_MODULUS};"
    )));
    assert!(src.contains(&format!(
        "uint256 internal constant BASE_FIELD = {BASE_FIELD_MODULUS};"
    )));
    // G2 constants in precompile order: X1 is the imaginary part x.c1.
    let (x, y) = f.vk.beta_g2.xy().unwrap();
    assert!(src.contains(&format!("BETA_X1 = {};", dec(x.c1))));
    assert!(src.contains(&format!("BETA_X0 = {};", dec(x.c0))));
    assert!(src.contains(&format!("BETA_Y1 = {};", dec(y.c1))));
    assert!(src.contains(&format!("BETA_Y0 = {};", dec(y.c0))));
    for j in 0..=N {
        let (x, y) = f.vk.gamma_abc_g1[j].xy().unwrap();
        assert!(src.contains(&format!("IC{j}_X = {};", dec(x))));
        assert!(src.contains(&format!("IC{j}_Y = {};", dec(y))));
    }
    assert!(!src.contains(&format!("IC{}_X", N + 1)));
    for i in 0..N {
        assert!(src.contains(&format!(
            "_addMultiple(acc, IC{}_X, IC{}_Y, input[{i}])",
            i + 1,
            i + 1
        )));
    }
    assert!(src.ends_with("}\n"));
    // Braces balance (a cheap guard against template slips; solc is run by verifier-tests/).
    assert_eq!(src.matches('{').count(), src.matches('}').count());
    // Deterministic.
    assert_eq!(
        src,
        solidity::solidity_verifier(&f.vk, "ToyVerifier").unwrap()
    );
}

#[test]
fn solidity_rejects_bad_names_and_keys_without_inputs() {
    let f = fixture();
    assert!(matches!(
        solidity::solidity_verifier(&f.vk, "My Verifier"),
        Err(Error::InvalidContractName(_))
    ));
    let mut vk = f.vk.clone();
    vk.gamma_abc_g1.truncate(1);
    assert!(matches!(
        solidity::solidity_verifier(&vk, "V"),
        Err(Error::InvalidKey(_))
    ));
}

// ---------------------------------------------------------------- formats

#[test]
fn export_vk_formats() {
    let f = fixture();
    assert_eq!("snarkjs".parse::<VkFormat>().unwrap(), VkFormat::Snarkjs);
    assert_eq!("solidity".parse::<VkFormat>().unwrap(), VkFormat::Solidity);
    assert_eq!("arkworks".parse::<VkFormat>().unwrap(), VkFormat::Arkworks);
    assert_eq!(
        "arkworks-bin".parse::<VkFormat>().unwrap(),
        VkFormat::ArkworksBin
    );
    assert!("json".parse::<VkFormat>().is_err());
    for (name, fmt) in VkFormat::ALL {
        assert_eq!(fmt.name(), name);
        let out = export_vk(&f.vk, fmt, "V").unwrap();
        let back = match fmt {
            VkFormat::Snarkjs => {
                snarkjs::vk_from_snarkjs_json(std::str::from_utf8(&out).unwrap()).unwrap()
            }
            VkFormat::Arkworks => {
                arkworks::vk_from_hex(std::str::from_utf8(&out).unwrap()).unwrap()
            }
            VkFormat::ArkworksBin => arkworks::vk_from_bytes(&out).unwrap(),
            VkFormat::Solidity => {
                assert!(std::str::from_utf8(&out).unwrap().contains("contract V {"));
                continue;
            }
        };
        assert_eq!(back, f.vk, "{name}");
    }
}

#[test]
fn projective_helpers_agree_with_arkworks_affine() {
    // Sanity: the affine points of the toy key are normalized, so "1" is the right z.
    let f = fixture();
    let p = (f.vk.alpha_g1.into_group() + f.vk.alpha_g1).into_affine();
    let s = snarkjs::proof_to_snarkjs(&Proof {
        a: p,
        b: f.vk.beta_g2,
        c: p,
    });
    assert_eq!(s.pi_a[2], "1");
    assert_eq!(s.pi_b[2], ["1".to_string(), "0".to_string()]);
}

// ---------------------------------------------------------------- fixtures

#[test]
fn write_fixture_layout() {
    use enygma_verifier::fixtures::{write_fixture, Fixture};
    let f = fixture();
    let dir = std::env::temp_dir().join(format!("enygma-verifier-fixture-{}", std::process::id()));
    let resp = response_json();
    let fx = Fixture {
        name: "toy-n3",
        k: None,
        source: "toy",
        contract_name: "ToyVerifier",
        vk: &f.vk,
        response_json: &resp,
        committed: None,
    };
    let out = write_fixture(&dir, &fx).unwrap();
    let read = |name: &str| std::fs::read_to_string(out.join(name)).unwrap();
    assert_eq!(read("response.json"), resp);
    assert_eq!(
        snarkjs::vk_from_snarkjs_json(&read("verification_key.json")).unwrap(),
        f.vk
    );
    assert_eq!(
        arkworks::vk_from_hex(&read("verifying_key.hex")).unwrap(),
        f.vk
    );
    let back = snarkjs::snarkjs_to_response(&read("proof.json"), &read("public.json")).unwrap();
    assert_eq!(back.to_json(), resp);
    assert!(read("Verifier.sol").contains("contract ToyVerifier {"));
    let meta: Value = serde_json::from_str(&read("meta.json")).unwrap();
    assert_eq!(
        meta,
        json!({"name": "toy-n3", "k": null, "nPublic": N, "source": "toy", "contract": "ToyVerifier", "committed": null})
    );
    // A fixture of a committed key names the committed files.
    let committed = enygma_verifier::fixtures::CommittedExports {
        verification_key: "toy.verification_key.json",
        solidity: "ToyVerifier.sol",
    };
    let out = write_fixture(
        &dir,
        &Fixture {
            committed: Some(committed),
            ..fx
        },
    )
    .unwrap();
    let meta: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("meta.json")).unwrap()).unwrap();
    assert_eq!(
        meta["committed"],
        json!({"verificationKey": "toy.verification_key.json", "solidity": "ToyVerifier.sol"})
    );

    // A response with the wrong number of public inputs, a bad name, a bad response: errors.
    let mut short = response_value();
    short["public_signal"].as_array_mut().unwrap().pop();
    let short = short.to_string();
    assert!(matches!(
        write_fixture(
            &dir,
            &Fixture {
                response_json: &short,
                ..fx
            }
        ),
        Err(Error::PublicInputCount { .. })
    ));
    assert!(write_fixture(&dir, &Fixture { name: "../x", ..fx }).is_err());
    assert!(write_fixture(
        &dir,
        &Fixture {
            response_json: "{}",
            ..fx
        }
    )
    .is_err());
    std::fs::remove_dir_all(&dir).unwrap();
}
