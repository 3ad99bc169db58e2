// Validates KEDA ScaledObjects offline against KEDA's CRD schema, as packaged by
// @kubernetes-models/keda. Input (stdin): a JSON array of ScaledObject manifests. Output
// (stdout): a JSON array of {name, errors[]}, one per manifest, in order.
//
// The CRD's schema accepts unknown fields (it does not forbid additional properties), so a
// misspelt field would pass silently; the same package's type declarations list every field
// KEDA knows, and fields outside them are reported too, like `kubernetes-validate --strict`
// does for built-in kinds.
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { ScaledObject } from "@kubernetes-models/keda/keda.sh/v1alpha1/ScaledObject";

const require = createRequire(import.meta.url);
const typesDir = path.join(
  path.dirname(require.resolve("@kubernetes-models/keda/package.json")),
  "keda.sh",
  "v1alpha1",
);

// The fields of one KEDA type, and the KEDA types of its object fields, read from its .d.ts:
//   "cooldownPeriod"?: number;
//   "scaleTargetRef": IComGithubKedacoreKedaV2ApisKedaV1alpha1ScaleTarget;
const declarations = new Map();
function fieldsOf(type) {
  if (!declarations.has(type)) {
    const text = readFileSync(path.join(typesDir, `${type}.d.ts`), "utf8");
    const body = text.slice(text.indexOf(`export interface I${type} {`));
    const fields = new Map();
    for (const m of body.slice(0, body.indexOf("\n}")).matchAll(/^ {4}"(\w+)"\??: ([^;]+);/gm)) {
      const kedaType = m[2].match(/^IComGithubKedacoreKedaV2ApisKedaV1alpha1(\w+)$/);
      const listOf = m[2].match(/^Array<IComGithubKedacoreKedaV2ApisKedaV1alpha1(\w+)>$/);
      fields.set(m[1], kedaType ? kedaType[1] : listOf ? listOf[1] : null);
    }
    declarations.set(type, fields);
  }
  return declarations.get(type);
}

function unknownFields(value, type, at, out) {
  if (value === null || typeof value !== "object") return;
  if (Array.isArray(value)) {
    value.forEach((v, i) => unknownFields(v, type, `${at}/${i}`, out));
    return;
  }
  const fields = fieldsOf(type);
  for (const [key, v] of Object.entries(value)) {
    if (!fields.has(key)) out.push(`${at}/${key}: not a field of KEDA's ${type}`);
    else if (fields.get(key)) unknownFields(v, fields.get(key), `${at}/${key}`, out);
  }
}

const manifests = JSON.parse(readFileSync(0, "utf8"));
const results = manifests.map((m) => {
  const errors = [];
  try {
    new ScaledObject(m).validate();
  } catch (e) {
    errors.push(String(e.message));
  }
  unknownFields(m.spec, "ScaledObjectSpec", "spec", errors);
  return { name: m?.metadata?.name ?? "?", errors };
});
process.stdout.write(JSON.stringify(results));
