// Compiles a verifier with solc-js and runs it in @ethereumjs/evm.

import solc from "solc";
import { createEVM } from "@ethereumjs/evm";
import { Common, Hardfork, Mainnet } from "@ethereumjs/common";
import { Account, createAddressFromString, hexToBytes } from "@ethereumjs/util";

/** Compile target: "paris" emits no PUSH0, so the bytecode runs on any post-merge EVM chain. */
export const EVM_VERSION = "paris";
/** The fork the EVM runs (its default); the BN254 precompile prices are those of EIP-1108. */
export const HARDFORK = Hardfork.Prague;
export const SOLC_VERSION = solc.version();

const CALLER = createAddressFromString("0x00000000000000000000000000000000000e0a11");

/** Compiles one source file holding one contract. Throws on any error. */
export function compile(source, fileName = "Verifier.sol") {
  const input = {
    language: "Solidity",
    sources: { [fileName]: { content: source } },
    settings: {
      optimizer: { enabled: true, runs: 200 },
      evmVersion: EVM_VERSION,
      outputSelection: { "*": { "*": ["abi", "evm.bytecode.object", "evm.deployedBytecode.object", "evm.methodIdentifiers"] } },
    },
  };
  const out = JSON.parse(solc.compile(JSON.stringify(input)));
  const diagnostics = out.errors ?? [];
  const errors = diagnostics.filter((e) => e.severity === "error");
  if (errors.length > 0) throw new Error(errors.map((e) => e.formattedMessage).join("\n"));
  const contracts = out.contracts[fileName] ?? {};
  const names = Object.keys(contracts);
  if (names.length !== 1) throw new Error(`${fileName}: expected one contract, found ${names.join(", ") || "none"}`);
  const c = contracts[names[0]];
  return {
    name: names[0],
    abi: c.abi,
    bytecode: c.evm.bytecode.object,
    deployedBytecode: c.evm.deployedBytecode.object,
    selectors: c.evm.methodIdentifiers,
    warnings: diagnostics.filter((e) => e.severity !== "error").map((e) => e.formattedMessage),
  };
}

/** A fresh EVM with a funded caller. */
export async function newEVM() {
  const evm = await createEVM({ common: new Common({ chain: Mainnet, hardfork: HARDFORK }) });
  await evm.stateManager.putAccount(CALLER, new Account(0n, 10n ** 20n));
  return evm;
}

/**
 * Starts the warm/cold accounting (EIP-2929) of a new transaction: only the sender, the
 * recipient and the precompiles are warm. `runCall` alone keeps every address an earlier call
 * touched warm and does not pre-warm the precompiles, so the first verifyProof in a fresh EVM
 * would pay 3 x 2,500 gas of cold access to 0x06, 0x07 and 0x08 that no transaction pays (the
 * precompiles are always warm), and the measured gas would depend on the order of the tests.
 */
export async function beginTransaction(evm, to) {
  await evm.journal.cleanup();
  for (const address of evm.precompiles.keys()) evm.journal.addAlwaysWarmAddress(address);
  evm.journal.addAlwaysWarmAddress(CALLER.toString());
  if (to) evm.journal.addAlwaysWarmAddress(to.toString());
}

/** Deploys init code with CREATE; returns the address and the gas the creation used. */
export async function deploy(evm, bytecodeHex) {
  await beginTransaction(evm);
  const res = await evm.runCall({ caller: CALLER, data: hexToBytes(`0x${bytecodeHex}`), gasLimit: 30_000_000n });
  if (res.execResult.exceptionError) throw new Error(`deployment failed: ${res.execResult.exceptionError.error}`);
  return { address: res.createdAddress, gasUsed: res.execResult.executionGasUsed };
}

/** A 32-byte big-endian ABI word. */
export function word(x) {
  const v = BigInt(x);
  if (v < 0n || v >= 1n << 256n) throw new Error(`value out of uint256 range: ${x}`);
  return v.toString(16).padStart(64, "0");
}

/** Calldata for verifyProof(a, b, c, input) from a reference-format response. */
export function verifyCalldata(selector, r) {
  const words = [r.pi_a[0], r.pi_a[1], r.pi_b[0][0], r.pi_b[0][1], r.pi_b[1][0], r.pi_b[1][1], r.pi_c[0], r.pi_c[1], ...r.public_signal];
  return hexToBytes(`0x${selector}${words.map(word).join("")}`);
}

/** Gas a transaction pays for its calldata (EIP-2028: 4 per zero byte, 16 per other byte). */
export function calldataGas(data) {
  let g = 0;
  for (const b of data) g += b === 0 ? 4 : 16;
  return g;
}

/** Calls `to` with `data`; returns { reverted, returnValue, gasUsed }. */
export async function call(evm, to, data) {
  await beginTransaction(evm, to);
  const res = await evm.runCall({ caller: CALLER, to, data, gasLimit: 10_000_000n });
  return {
    reverted: res.execResult.exceptionError !== undefined,
    error: res.execResult.exceptionError?.error,
    returnValue: res.execResult.returnValue,
    gasUsed: res.execResult.executionGasUsed,
  };
}

/** Decodes a single ABI-encoded bool (or uint) return word. */
export function decodeWord(bytes) {
  if (bytes.length !== 32) throw new Error(`expected 32 return bytes, got ${bytes.length}`);
  return BigInt(`0x${Buffer.from(bytes).toString("hex")}`);
}
