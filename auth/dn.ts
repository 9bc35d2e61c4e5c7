/**
 * Distinguished names as strings (RFC 4514) for the LDAP verifier's bind DN. The spec (5.5)
 * writes the bind DN as `<nameComponent>=<user name>;<rootComponents>`, the RFC 1779 style;
 * these functions use ',' between components, as RFC 4514 (which LDAPv3 servers expect) does.
 */

// RFC 4514 section 2.4: the characters that must be escaped anywhere in a value. '=' is not
// required, but escaping it keeps a user name from looking like a second type=value.
const alwaysEscaped = new Set(['"', "+", ",", ";", "<", ">", "\\", "="]);

/** Escapes a user-supplied string for use as one attribute value of a DN (RFC 4514 section 2.4). */
export function escapeDnValue(value: string): string {
  const chars = [...value];
  return chars
    .map((char, index) => {
      if (char === "\0") return "\\00";
      if (alwaysEscaped.has(char)) return `\\${char}`;
      if (index === 0 && (char === " " || char === "#")) return `\\${char}`;
      if (index === chars.length - 1 && char === " ") return "\\ ";
      return char;
    })
    .join("");
}

const descr = "[A-Za-z][A-Za-z0-9-]*";
const numericOid = "(?:0|[1-9][0-9]*)(?:\\.(?:0|[1-9][0-9]*))+";
const attributeTypePattern = new RegExp(`^(?:${descr}|${numericOid})$`);

/** An attribute type as RFC 4512 writes it: a descriptor (`uid`, `cn`) or a numeric OID (`0.9.2342.19200300.100.1.1`). */
export function isAttributeType(name: string): boolean {
  return attributeTypePattern.test(name);
}

// RFC 4514 section 3, as character classes: a pair is an escaped special character or a hex
// byte; the first and last characters of an unescaped value have extra restrictions.
const pair = `\\\\(?:[ "#+,;<=>\\\\]|[0-9A-Fa-f]{2})`;
const leadChar = `[^\\0 "#+,;<>\\\\]`;
const stringChar = `[^\\0"+,;<>\\\\]`;
const trailChar = `[^\\0 "+,;<>\\\\]`;
const stringValue = `(?:(?:${leadChar}|${pair})(?:(?:${stringChar}|${pair})*(?:${trailChar}|${pair}))?)?`;
const hexValue = "#(?:[0-9A-Fa-f]{2})+";
const typeAndValue = `(?:${descr}|${numericOid})=(?:${hexValue}|${stringValue})`;
const rdn = `${typeAndValue}(?:\\+${typeAndValue})*`;
const dnPattern = new RegExp(`^(?:${rdn}(?:,${rdn})*)?$`);

/**
 * A light syntax check of an RFC 4514 DN string: ','-separated RDNs of `type=value` (joined by
 * '+' when multi-valued), values with only valid escapes. The empty string (the root) is a DN.
 * No spaces around separators, and no ';' separators (RFC 1779 style).
 */
export function isDistinguishedName(text: string): boolean {
  return dnPattern.test(text);
}

/**
 * A DN written with ';' between RDNs, as spec 5.5 writes the bind DN (RFC 1779 allows ';' as
 * well as ','), in RFC 4514 form: each unescaped ';' becomes ','. Escaped characters (`\;`,
 * `\,`, `\\`) stay as they are, so a ';' inside a value is kept only when escaped.
 */
export function withCommaSeparators(text: string): string {
  let out = "";
  for (let i = 0; i < text.length; i++) {
    const char = text[i]!;
    if (char === "\\") {
      out += text.slice(i, i + 2);
      i++;
    } else out += char === ";" ? "," : char;
  }
  return out;
}

/**
 * The bind DN `<nameComponent>=<escaped user>,<rootComponents>` (without the trailing ',' when
 * rootComponents is empty). `nameComponent` and `rootComponents` must have passed
 * `isAttributeType` and `isDistinguishedName`; only the user name is escaped.
 */
export function bindDn(nameComponent: string, user: string, rootComponents: string): string {
  const first = `${nameComponent}=${escapeDnValue(user)}`;
  return rootComponents === "" ? first : `${first},${rootComponents}`;
}
