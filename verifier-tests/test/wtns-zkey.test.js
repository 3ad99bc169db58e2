// Our statements proved by snarkjs' own prover: the witness of a request (`enygma export-wtns`)
// and the development key as a zkey (`enygma export-zkey`), in iden3's formats, which is how
// rapidsnark is handed the same inputs as our prover in benches/peers/rapidsnark.sh. snarkjs
// checks the witness against our exported R1CS, proves with the zkey, and verifies its proof
// with the zkey's verification key; our verifier must accept that proof against keys/.
//
// ENYGMA: the CLI (default: ../target/debug/enygma, which run.sh builds); KEYS_DIR: the
// development verifying keys (default: ../keys).

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";

import { KEYS_DIR, R } from "../lib/fixtures.js";

const run = promisify(execFile);
const require = createRequire(import.meta.url);
const SNARKJS_CLI = path.join(path.dirname(require.resolve("snarkjs")), "cli.cjs");
const here = path.dirname(fileURLToPath(import.meta.url));
const ENYGMA = path.resolve(process.env.ENYGMA ?? path.join(here, "..", "..", "target", "debug", "enygma"));
const STEM = "ownership-721";

const readJson = (file) => JSON.parse(fs.readFileSync(file, "utf8"));
let dir;
const file = (name) => path.join(dir, name);
const enygma = (...args) => run(ENYGMA, args, { maxBuffer: 1 << 26 });
const snarkjs = (...args) => run(process.execPath, [SNARKJS_CLI, ...args], { maxBuffer: 1 << 26 });

/** snarkjs' proof.json and public.json as the reference's response (G2 as (c1, c0)). */
const snarkjsToResponse = (proof, publicSignals) => ({
  pi_a: proof.pi_a.slice(0, 2),
  pi_b: proof.pi_b.slice(0, 2).map(([c0, c1]) => [c1, c0]),
  pi_c: proof.pi_c.slice(0, 2),
  public_signal: publicSignals,
});

/** Exit status of `enygma verify` on a response, 0 when valid. */
async function verifyWithEnygma(response, name) {
  fs.writeFileSync(file(name), JSON.stringify(response));
  try {
    await enygma("verify", "--circuit", STEM, "--keys-dir", KEYS_DIR, file(name));
    return 0;
  } catch (e) {
    if (typeof e.code !== "number") throw e;
    return e.code;
  }
}

before(async () => {
  if (!fs.existsSync(ENYGMA)) throw new Error(`${ENYGMA} does not exist: build enygma-cli, or set ENYGMA`);
  dir = fs.mkdtempSync(path.join(os.tmpdir(), "enygma-wtns-zkey-"));
  const { stdout } = await enygma("gen-request", "--circuit", STEM, "--seed", "7");
  fs.writeFileSync(file("request.json"), stdout);
  await enygma("export-wtns", "--circuit", STEM, "--out", file("witness.wtns"), file("request.json"));
  await enygma("export-r1cs", "--circuit", STEM, "--out", file("circuit.r1cs"));
  await enygma("export-zkey", "--circuit", STEM, "--keys-dir", KEYS_DIR, "--out", file("circuit.zkey"));
});

after(() => {
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

test("snarkjs 'wtns check' accepts the exported witness against the exported R1CS", async () => {
  const { stdout } = await snarkjs("wtns", "check", file("circuit.r1cs"), file("witness.wtns"));
  assert.match(stdout, /WITNESS IS CORRECT/);
});

test("snarkjs 'wtns check' refuses the witness with one bit of a private wire flipped", async () => {
  const bytes = fs.readFileSync(file("witness.wtns"));
  // The header and section table take 76 bytes, then 32 per wire: the lowest bit of wire 100,
  // past the one and the 6 public inputs.
  bytes[76 + 32 * 100] ^= 1;
  fs.writeFileSync(file("flipped.wtns"), bytes);
  await assert.rejects(snarkjs("wtns", "check", file("circuit.r1cs"), file("flipped.wtns")), (e) => {
    assert.equal(e.code, 1);
    assert.match(e.stdout + e.stderr, /WITNESS IS NOT CORRECT/);
    return true;
  });
});

test("snarkjs' proof from the exported zkey and witness verifies with snarkjs and with our verifier", async () => {
  await snarkjs("groth16", "prove", file("circuit.zkey"), file("witness.wtns"), file("proof.json"), file("public.json"));
  await snarkjs("zkey", "export", "verificationkey", file("circuit.zkey"), file("verification_key.json"));
  const { stdout } = await snarkjs("groth16", "verify", file("verification_key.json"), file("public.json"), file("proof.json"));
  assert.match(stdout, /OK!/);

  // The zkey's verification key is the development key's, committed in keys/.
  const exported = readJson(file("verification_key.json"));
  const committed = readJson(path.join(KEYS_DIR, `${STEM}.verification_key.json`));
  for (const field of ["nPublic", "vk_alpha_1", "vk_beta_2", "vk_gamma_2", "vk_delta_2", "IC"]) {
    assert.deepEqual(exported[field], committed[field], field);
  }

  // The witness's public wires are the request's public inputs, as our prover computes them.
  const publicSignals = readJson(file("public.json"));
  const { stdout: ours } = await enygma("prove", "--circuit", STEM, "--keys-dir", KEYS_DIR, "--cache-dir", "none", file("request.json"));
  assert.deepEqual(publicSignals, JSON.parse(ours).public_signal);

  const response = snarkjsToResponse(readJson(file("proof.json")), publicSignals);
  assert.equal(await verifyWithEnygma(response, "response.json"), 0);
  const tampered = structuredClone(response);
  tampered.public_signal[0] = ((BigInt(tampered.public_signal[0]) + 1n) % R).toString();
  assert.notEqual(await verifyWithEnygma(tampered, "tampered.json"), 0);
});

test("import-zkey records the exported zkey as a development key, not a ceremony's", async () => {
  const keys = file("imported-keys");
  const { stderr } = await enygma("import-zkey", "--circuit", STEM, "--keys-dir", keys, file("circuit.zkey"));
  assert.match(stderr, /imported \(development-seed\)/);
  const exported = readJson(path.join(keys, `${STEM}.verification_key.json`));
  const committed = readJson(path.join(KEYS_DIR, `${STEM}.verification_key.json`));
  assert.deepEqual(exported, committed);
});
