// A ceremony's proof checked by the ecosystem's own tools (run by ../ceremony.sh, which makes the
// ceremony, imports its zkey and has the real server prove): snarkjs against the ceremony's
// verification_key.json, and snarkjs' Solidity verifier (Groth16Verifier) in an EVM. Our export
// of the imported key must be the same key as snarkjs' export.

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { createRequire } from "node:module";
import fs from "node:fs";
import path from "node:path";

import * as snarkjs from "snarkjs";

import { responseToSnarkjsProof, clone, R } from "../lib/fixtures.js";
import { compile, newEVM, deploy, verifyCalldata, call, decodeWord } from "../lib/evm.js";

const run = promisify(execFile);
const require = createRequire(import.meta.url);
const SNARKJS_CLI = path.join(path.dirname(require.resolve("snarkjs")), "cli.cjs");

const dir = process.env.CEREMONY_DIR;
if (!dir) throw new Error("CEREMONY_DIR is not set: run verifier-tests/ceremony.sh");
const STEM = "ownership-721";
const readJson = (file) => JSON.parse(fs.readFileSync(file, "utf8"));
const ceremonyVk = readJson(path.join(dir, "snarkjs", "verification_key.json"));
const response = readJson(path.join(dir, "response.json"));
const proof = responseToSnarkjsProof(response);
const publicSignals = response.public_signal;

after(async () => {
  if (globalThis.curve_bn128) await globalThis.curve_bn128.terminate();
});

test("our export of the imported key is the ceremony's verification key", () => {
  const ours = readJson(path.join(dir, "keys", `${STEM}.verification_key.json`));
  for (const field of ["protocol", "curve", "nPublic", "vk_alpha_1", "vk_beta_2", "vk_gamma_2", "vk_delta_2", "IC"]) {
    assert.deepEqual(ours[field], ceremonyVk[field], field);
  }
});

test("snarkjs CLI 'groth16 verify' accepts the server's proof with the ceremony's key", async () => {
  fs.writeFileSync(path.join(dir, "proof.json"), JSON.stringify(proof));
  fs.writeFileSync(path.join(dir, "public.json"), JSON.stringify(publicSignals));
  const { stdout } = await run(process.execPath, [SNARKJS_CLI, "groth16", "verify",
    path.join(dir, "snarkjs", "verification_key.json"), path.join(dir, "public.json"), path.join(dir, "proof.json")]);
  assert.match(stdout, /OK!/);
});

test("snarkjs groth16.verify rejects the proof for other public inputs", async () => {
  assert.equal(await snarkjs.groth16.verify(ceremonyVk, publicSignals, proof), true);
  const pub = clone(publicSignals);
  pub[0] = ((BigInt(pub[0]) + 1n) % R).toString();
  assert.equal(await snarkjs.groth16.verify(ceremonyVk, pub, proof), false);
});

test("snarkjs' Solidity verifier accepts the proof in an EVM and rejects a tampered one", async () => {
  const compiled = compile(fs.readFileSync(path.join(dir, "snarkjs", "Verifier.sol"), "utf8"));
  assert.equal(compiled.name, "Groth16Verifier");
  const signature = `verifyProof(uint256[2],uint256[2][2],uint256[2],uint256[${publicSignals.length}])`;
  const selector = compiled.selectors[signature];
  assert.ok(selector, `no ${signature} in ${Object.keys(compiled.selectors).join(", ")}`);
  const evm = await newEVM();
  const { address } = await deploy(evm, compiled.bytecode);
  const verdict = async (r) => {
    const res = await call(evm, address, verifyCalldata(selector, r));
    assert.equal(res.reverted, false, `verifyProof reverted: ${res.error}`);
    return decodeWord(res.returnValue);
  };
  assert.equal(await verdict(response), 1n);
  const tampered = clone(response);
  tampered.public_signal[0] = ((BigInt(tampered.public_signal[0]) + 1n) % R).toString();
  assert.equal(await verdict(tampered), 0n);
});
