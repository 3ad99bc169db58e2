//! Native tests of the join-split, and the inputs that the circuit tests share.

use std::str::FromStr;

use ark_ff::{AdditiveGroup, Field};
use num_bigint::BigUint;
use rand::SeedableRng;

use super::*;

pub(crate) fn rng(seed: u64) -> rand_chacha::ChaCha8Rng {
    rand_chacha::ChaCha8Rng::seed_from_u64(seed)
}

pub(crate) fn fr(decimal: &str) -> Fr {
    Fr::from_str(decimal).unwrap()
}

pub(crate) fn hex(address: &str) -> Fr {
    let digits = address.strip_prefix("0x").unwrap();
    Fr::from(BigUint::parse_bytes(digits.as_bytes(), 16).unwrap())
}

/// Puts every non-dummy slot's note, as the slot now is, alone in a fresh tree at the slot's
/// index, and recomputes the public values: after an edit, only the rule under test can fail.
pub(crate) fn replant(t: &mut JoinSplitInputs) {
    let dummy = dummy_nullifier();
    for slot in &mut t.inputs {
        if nullifier(&slot.secret_key, &slot.path.index) == dummy {
            continue;
        }
        if let Some(index) = slot.path.leaf_index() {
            let mut tree = Tree::new();
            tree.insert(index, slot.note(&t.token));
            *slot.path = tree.path(index);
            slot.merkle_root = tree.root();
        }
    }
    t.derive_public_values();
}

/// The ERC-20 sample with dvp.md's salts (saltsIn ["11"], saltsOut ["21","22"], revertSalt
/// "31") and the root that its siblings reach in the current note format.
pub(crate) fn worked_example(kind: TokenKind) -> JoinSplitInputs {
    // Level-0 and level-1 siblings differ between the samples; levels 2..7 are Z2..Z7.
    let (sk, index, low_siblings, values_in, values_out, recipients, nft, token) = match kind {
        TokenKind::Erc20 => (
            "10534049063963455011897937770941447127618543489463665534023833678350395856350",
            2u64,
            [
                "21786163348386038604960770631540184405176086071424084281943739401806009032442",
                "10786047888450906611267850280848064185795351542979804812451365205907675340230",
            ],
            110u64,
            [100u64, 10],
            [
                "19006592290930285373715468601944794930977683604683055569546449381577425110012",
                "10808534587264517397442291269813098442992867201634294388439364919995129148643",
            ],
            "5189795159747940799986155788564043331453829499522623820278860744664243611848",
            Token::Erc20 {
                address: hex("0x22e5106744E618eF9ddD3E0a7a51b09f784581bD"),
            },
        ),
        TokenKind::Erc1155 => (
            "20181099487822425550088855543481194850284379286953420582249354289168089877297",
            1,
            [
                "17670026052663670202605450712585004914721800623979276797213817129081172377060",
                "18548196279604799461048000334259916142758522801444715662239164855577399482970",
            ],
            10,
            [10, 0],
            [
                "12526245711107810350166372037775874844525682593310961903703281202681882921611",
                "17553361201663278262614685529503505022851154235358646237418889103346577160932",
            ],
            "19103449043999652494680472126268141113573349271003498523707368194000112272987",
            Token::Erc1155 {
                address: hex("0x2dA195457f1CFDA0e69527c2A3C16c34326839F6"),
                id: Fr::ONE,
            },
        ),
    };
    let mut siblings = crate::merkle::zeros()[..8].to_vec();
    siblings[0] = fr(low_siblings[0]);
    siblings[1] = fr(low_siblings[1]);
    let mut slot = InputSlot {
        secret_key: fr(sk).into(),
        salt: Fr::from(11u64).into(),
        value: Fr::from(values_in).into(),
        path: MerklePath {
            index: Fr::from(index),
            siblings: siblings.try_into().unwrap(),
        }
        .into(),
        ..InputSlot::dummy()
    };
    slot.merkle_root = slot.path.root(slot.note(&token)).unwrap();
    let mut inputs: [InputSlot; INPUT_SLOTS] = std::array::from_fn(|_| InputSlot::dummy());
    inputs[0] = slot;
    let output = |o: usize| OutputNote {
        recipient_key: fr(recipients[o]).into(),
        salt: Fr::from(21 + o as u64).into(),
        value: Fr::from(values_out[o]).into(),
        commitment: Fr::ZERO,
    };
    let mut t = JoinSplitInputs {
        token: token.into(),
        nft_commitment: fr(nft),
        inputs,
        outputs: [output(0), output(1)],
        revert_salt: Fr::from(31u64).into(),
        revert_commitment: Fr::ZERO,
    };
    t.derive_public_values();
    t
}

/// dvp.md, "Worked example in the current format": our own computation, reproduced exactly.
#[test]
fn worked_examples_reproduce_dvp_md() {
    let t = worked_example(TokenKind::Erc20);
    assert_eq!(
        *t.token,
        Token::Erc20 {
            address: fr("199213985795714995297001884428921580810666344893")
        }
    );
    assert_eq!(
        public_key(&t.inputs[0].secret_key),
        fr("1533925379893843268369636355724977827580873015240282908386183223696786491972")
    );
    let expected_erc20 = [
        "21481844264345348491450973170534383041240410542292026199456692821966477023959",
        "15323687377377599026054929660224430856954785003946108534492466325259671280247",
        "18480879055261430510470181582810178548337996036686167927882749721349512741340",
        "11532975316932207340643386438191602053298471136973013108761714596212004469086",
        "12413772015089428492993692476657920739845628792898856387047530696395774562739",
    ];
    let expected_erc1155 = [
        "7754283021412921369992099195233805839137379644134008403116654371008813631247",
        "17915612612894272341435753990140544894982515529761292954495027628926348661961",
        "2297329791627880350990025068368131388645621910796916102088814534240323377041",
        "4111220624341401332598077568355635902438709188352689558284078531139020583057",
        "7508706752975335364036477403768239255356299255971840122432528277236776208174",
    ];
    for (kind, expected) in [
        (TokenKind::Erc20, expected_erc20),
        (TokenKind::Erc1155, expected_erc1155),
    ] {
        let t = worked_example(kind);
        assert_eq!(t.check(), Ok(()), "{kind}");
        let got = [
            t.inputs[0].merkle_root,
            t.inputs[0].nullifier,
            t.outputs[0].commitment,
            t.outputs[1].commitment,
            t.revert_commitment,
        ];
        assert_eq!(got, expected.map(fr), "{kind}");
        // public_signal: nft, roots (slot 0, then "0"), nullifiers (then H(0, 0)), tree
        // numbers (all 0), the two outputs, the revert.
        let public = t.public_inputs();
        assert_eq!(public.len(), NUM_PUBLIC_INPUTS);
        assert_eq!(public[0], t.nft_commitment);
        assert_eq!(public[1], got[0]);
        assert!(public[2..11].iter().all(|r| *r == Fr::ZERO));
        assert_eq!(public[11], got[1]);
        assert!(public[12..21].iter().all(|n| *n == dummy_nullifier()));
        assert!(public[21..31].iter().all(|n| *n == Fr::ZERO));
        assert_eq!(&public[31..], &got[2..]);
    }
}

#[test]
fn generated_inputs_pass_every_rule() {
    let mut rng = rng(1);
    for kind in TokenKind::ALL {
        for n in 0..=INPUT_SLOTS {
            let t = JoinSplitInputs::generate(kind, n, &mut rng);
            assert_eq!(t.check(), Ok(()), "{kind} with {n} inputs");
            assert_eq!(t.kind(), kind);
            let real = t
                .inputs
                .iter()
                .filter(|s| s.nullifier != dummy_nullifier())
                .count();
            assert_eq!(real, n);
            assert_eq!(t.public_inputs().len(), NUM_PUBLIC_INPUTS);
        }
    }
}

/// The rule that `edit` breaks, with its message.
fn broken(good: &JoinSplitInputs, edit: impl Fn(&mut JoinSplitInputs)) -> String {
    let mut t = good.clone();
    edit(&mut t);
    t.check().unwrap_err().to_string()
}

#[test]
fn each_broken_rule_is_named_with_its_field() {
    let good = JoinSplitInputs::generate(TokenKind::Erc1155, 3, &mut rng(2));
    let one = Fr::ONE;
    let too_big = Fr::from(amount::bound().clone());
    assert_eq!(
        broken(&good, |t| *t.inputs[1].value = too_big),
        "check (amount below 10^36) failed: values_in[1]"
    );
    assert_eq!(
        broken(&good, |t| {
            t.inputs[2].path.index += Fr::from(256u64);
            t.derive_public_values()
        }),
        "check (leaf index below 256) failed: merkle_proofs[2].indices"
    );
    assert_eq!(
        broken(&good, |t| t.inputs[0].nullifier += one),
        "check (nullifier) failed: nullifiers[0]"
    );
    assert_eq!(
        broken(&good, |t| t.inputs[2].merkle_root += one),
        "check (note in the tree) failed: merkle_roots[2]"
    );
    assert_eq!(
        broken(&good, |t| {
            t.inputs[1].salt += one;
            t.derive_public_values()
        }),
        "check (note in the tree) failed: merkle_roots[1]"
    );
    // A zero-amount slot that is no note of the tree and not the dummy.
    assert_eq!(
        broken(&good, |t| {
            t.inputs[5] = InputSlot {
                secret_key: t.inputs[0].secret_key.clone(),
                path: MerklePath {
                    index: Fr::from(200u64),
                    ..MerklePath::zero()
                }
                .into(),
                ..InputSlot::dummy()
            };
            t.derive_public_values()
        }),
        "check (note in the tree) failed: merkle_roots[5]"
    );
    // A note of key 0 at index 0 publishes the dummy nullifier: it may carry nothing.
    assert_eq!(
        broken(&good, |t| {
            t.inputs[4] = InputSlot {
                value: Fr::from(7u64).into(),
                ..InputSlot::dummy()
            };
            t.outputs[0].value += Fr::from(7u64);
            replant(t)
        }),
        "check (dummy slot carries no amount) failed: values_in[4]"
    );
    assert_eq!(
        broken(&good, |t| {
            t.inputs[3] = t.inputs[1].clone();
            *t.outputs[0].value += *t.inputs[1].value;
            t.derive_public_values()
        }),
        "check (distinct nullifiers) failed: nullifiers[3]"
    );
    assert_eq!(
        broken(&good, |t| {
            t.inputs.swap(0, 3);
            t.derive_public_values()
        }),
        "check (slot 0 holds a note) failed: key_pairs_in[0]"
    );
    assert_eq!(
        broken(&good, |t| {
            *t.outputs[1].value = too_big;
            t.derive_public_values()
        }),
        "check (amount below 10^36) failed: values_out[1]"
    );
    assert_eq!(
        broken(&good, |t| t.outputs[1].commitment += one),
        "check (output commitment) failed: commitments_out[1]"
    );
    assert_eq!(
        broken(&good, |t| t.revert_commitment += one),
        "check (revert commitment) failed: revert_commitment"
    );
    assert_eq!(
        broken(&good, |t| {
            t.outputs[0].value += one;
            t.derive_public_values()
        }),
        "check (value conservation) failed: values_out"
    );
    // The public values the reference leaves free change nothing.
    let mut t = good.clone();
    t.nft_commitment += one;
    t.inputs[0].tree_number += one;
    t.inputs[7].merkle_root += one;
    assert_eq!(t.check(), Ok(()));
}

/// A spent note of amount zero (in the tree) is a real slot, not a dummy.
#[test]
fn a_real_zero_amount_note_may_be_spent() {
    let mut t = JoinSplitInputs::generate(TokenKind::Erc20, 3, &mut rng(3));
    *t.inputs[2].value = Fr::ZERO;
    *t.outputs[0].value = t.input_total();
    *t.outputs[1].value = Fr::ZERO;
    replant(&mut t);
    assert_eq!(t.check(), Ok(()));
    assert_ne!(t.inputs[2].nullifier, dummy_nullifier());
}
