// A toy Groth16 circuit with any number of public inputs, to exercise the verifier artifacts
// before (and independently of) the real transfer circuit. Shared by the tests and the
// `make-fixtures` example through `#[path]`; it needs the dev-dependencies ark-relations,
// ark-std and rand_chacha.
//
// Statement: for public y[0..n) the prover knows w[0..n) with w[i] * w[(i+1) % n] = y[i] - i.
// The Groth16 verifier does one ecMul per public input, so a toy key with 8k + 2 inputs costs
// the same gas as the transfer circuit's key for k.

#![allow(dead_code)]

use ark_bn254::{Bn254, Fr};
use ark_groth16::{Groth16, Proof, ProvingKey, VerifyingKey};
use ark_relations::gr1cs::{
    ConstraintSynthesizer, ConstraintSystemRef, LinearCombination, SynthesisError, Variable,
};
use ark_std::UniformRand;
use rand_chacha::rand_core::SeedableRng;
use rand_chacha::ChaCha20Rng;

pub struct ToyCircuit {
    pub n_public: usize,
    /// None during setup.
    pub witness: Option<Vec<Fr>>,
}

impl ToyCircuit {
    pub fn public_inputs(w: &[Fr]) -> Vec<Fr> {
        let n = w.len();
        (0..n)
            .map(|i| w[i] * w[(i + 1) % n] + Fr::from(i as u64))
            .collect()
    }
}

impl ConstraintSynthesizer<Fr> for ToyCircuit {
    fn generate_constraints(self, cs: ConstraintSystemRef<Fr>) -> Result<(), SynthesisError> {
        let n = self.n_public;
        let ys = self.witness.as_ref().map(|w| Self::public_inputs(w));
        let mut y_vars = Vec::with_capacity(n);
        for i in 0..n {
            y_vars.push(cs.new_input_variable(|| {
                ys.as_ref()
                    .map(|y| y[i])
                    .ok_or(SynthesisError::AssignmentMissing)
            })?);
        }
        let mut w_vars = Vec::with_capacity(n);
        for i in 0..n {
            w_vars.push(cs.new_witness_variable(|| {
                self.witness
                    .as_ref()
                    .map(|w| w[i])
                    .ok_or(SynthesisError::AssignmentMissing)
            })?);
        }
        for i in 0..n {
            let (a, b, y) = (w_vars[i], w_vars[(i + 1) % n], y_vars[i]);
            cs.enforce_r1cs_constraint(
                || LinearCombination::new() + a,
                || LinearCombination::new() + b,
                || LinearCombination::new() + y - (Fr::from(i as u64), Variable::One),
            )?;
        }
        Ok(())
    }
}

/// Deterministic setup for a toy key with `n_public` inputs.
pub fn toy_setup(n_public: usize, seed: u64) -> (ProvingKey<Bn254>, VerifyingKey<Bn254>) {
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    let pk = Groth16::<Bn254>::generate_random_parameters_with_reduction(
        ToyCircuit {
            n_public,
            witness: None,
        },
        &mut rng,
    )
    .expect("toy setup");
    let vk = pk.vk.clone();
    (pk, vk)
}

/// Deterministic proof with random nonzero witness values.
pub fn toy_prove(pk: &ProvingKey<Bn254>, n_public: usize, seed: u64) -> (Proof<Bn254>, Vec<Fr>) {
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    let w: Vec<Fr> = (0..n_public).map(|_| Fr::rand(&mut rng)).collect();
    let inputs = ToyCircuit::public_inputs(&w);
    let proof = Groth16::<Bn254>::create_random_proof_with_reduction(
        ToyCircuit {
            n_public,
            witness: Some(w),
        },
        pk,
        &mut rng,
    )
    .expect("toy proof");
    (proof, inputs)
}
