// snarkjs (an independent JavaScript Groth16 implementation) checks our exported keys and proofs.

import { test, after } from "node:test";
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { createRequire } from "node:module";
import path from "node:path";
import fs from "node:fs";
import os from "node:os";

import * as snarkjs from "snarkjs";
import { getCurveFromName, utils } from "ffjavascript";

import { loadFixtures, responseToSnarkjsProof, committedExports, clone, R } from "../lib/fixtures.js";

const run = promisify(execFile);
const require = createRequire(import.meta.url);
// require.resolve("snarkjs") is build/main.cjs; the CLI sits beside it.
const SNARKJS_CLI = path.join(path.dirname(require.resolve("snarkjs")), "cli.cjs");

const fixtures = loadFixtures();

after(async () => {
  // snarkjs caches its curve (with worker threads) on globalThis; stop it so the process exits.
  if (globalThis.curve_bn128) await globalThis.curve_bn128.terminate();
});

const verify = (vk, pub, proof) => snarkjs.groth16.verify(vk, pub, proof);

for (const fx of fixtures) {
  test(`${fx.name}: verification_key.json has snarkjs's layout`, async () => {
    const { vk } = fx;
    assert.equal(vk.protocol, "groth16");
    assert.equal(vk.curve, "bn128");
    assert.equal(vk.nPublic, fx.meta.nPublic);
    assert.equal(vk.IC.length, vk.nPublic + 1);
    assert.equal(fx.publicSignals.length, vk.nPublic);
    assert.deepEqual(vk.vk_alpha_1[2], "1");
    for (const p of vk.IC) assert.equal(p[2], "1");
    for (const k of ["vk_beta_2", "vk_gamma_2", "vk_delta_2"]) assert.deepEqual(vk[k][2], ["1", "0"], k);
    // vk_alphabeta_12 is e(alpha, beta) as ffjavascript (snarkjs's curve library) computes it.
    const curve = await getCurveFromName("bn128");
    const e = curve.pairing(curve.G1.fromObject(utils.unstringifyBigInts(vk.vk_alpha_1)),
                            curve.G2.fromObject(utils.unstringifyBigInts(vk.vk_beta_2)));
    assert.deepEqual(utils.stringifyBigInts(curve.Gt.toObject(e)), vk.vk_alphabeta_12);
  });

  const committed = committedExports(fx);
  if (committed) {
    test(`${fx.name}: verification_key.json is the committed ${path.basename(committed.vkFile)}`, () => {
      assert.ok(fs.existsSync(committed.vkFile), `${committed.vkFile} is missing`);
      assert.equal(fx.vkText, fs.readFileSync(committed.vkFile, "utf8"));
    });
  }

  test(`${fx.name}: proof.json and public.json are the response, converted`, () => {
    assert.deepEqual(fx.proof, responseToSnarkjsProof(fx.response));
    assert.deepEqual(fx.publicSignals, fx.response.public_signal);
  });

  test(`${fx.name}: snarkjs groth16.verify accepts the proof`, async () => {
    assert.equal(await verify(fx.vk, fx.publicSignals, fx.proof), true);
  });

  test(`${fx.name}: snarkjs groth16.verify rejects tampering`, async () => {
    const withInput = (i, value) => {
      const pub = clone(fx.publicSignals);
      pub[i] = value.toString();
      return pub;
    };
    const x0 = BigInt(fx.publicSignals[0]);
    const last = fx.publicSignals.length - 1;
    const xl = BigInt(fx.publicSignals[last]);
    assert.equal(await verify(fx.vk, withInput(0, (x0 + 1n) % R), fx.proof), false, "public[0] + 1");
    assert.equal(await verify(fx.vk, withInput(last, (xl + 1n) % R), fx.proof), false, "public[last] + 1");
    assert.equal(await verify(fx.vk, withInput(0, x0 + R), fx.proof), false, "public[0] + r (non-canonical)");
    const swapped = { ...clone(fx.proof), pi_a: fx.proof.pi_c, pi_c: fx.proof.pi_a };
    assert.equal(await verify(fx.vk, fx.publicSignals, swapped), false, "A and C swapped");
    // The response's (c1, c0) order is not snarkjs's: B read that way is not a valid point.
    const evmOrder = { ...clone(fx.proof), pi_b: [fx.response.pi_b[0], fx.response.pi_b[1], ["1", "0"]] };
    assert.equal(await verify(fx.vk, fx.publicSignals, evmOrder), false, "pi_b in (c1, c0) order");
  });

  test(`${fx.name}: snarkjs CLI 'groth16 verify' accepts the files`, async () => {
    const { stdout } = await run(process.execPath, [SNARKJS_CLI, "groth16", "verify",
      path.join(fx.dir, "verification_key.json"), path.join(fx.dir, "public.json"), path.join(fx.dir, "proof.json")]);
    assert.match(stdout, /OK!/);
  });

  test(`${fx.name}: snarkjs CLI 'groth16 verify' rejects a tampered public.json`, async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "enygma-vt-"));
    try {
      const pub = clone(fx.publicSignals);
      pub[0] = ((BigInt(pub[0]) + 1n) % R).toString();
      fs.writeFileSync(path.join(dir, "public.json"), JSON.stringify(pub));
      const res = await run(process.execPath, [SNARKJS_CLI, "groth16", "verify",
        path.join(fx.dir, "verification_key.json"), path.join(dir, "public.json"), path.join(fx.dir, "proof.json")])
        .then((r) => ({ code: 0, ...r }), (e) => e);
      assert.notEqual(res.code, 0, "exit status");
      assert.doesNotMatch(res.stdout, /OK!/);
      assert.match(res.stdout + res.stderr, /Invalid proof/);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
}
