import type { Component, ComponentName } from "./types";

/** Spec 5.3: every selectable component and its type. */
export const componentTypes: Record<ComponentName, Component["type"]> = {
  config: "api",
  decision: "api",
  export: "api",
  fhir: "export",
  mapping: "api",
  mongodb: "export",
  mysql: "export",
  pipeline: "export",
  postgres: "export",
  objectstore: "export",
  redact: "api",
  user: "api",
};

export function isComponentName(name: string): name is ComponentName {
  return Object.hasOwn(componentTypes, name);
}

export function component(name: ComponentName, domainName?: string): Component {
  return { name, type: componentTypes[name], ...(domainName ? { domainName: domainName.toLowerCase() } : {}) };
}

/** The components this service serves; the others of spec 5.3 may be selected but have no endpoint yet. */
export const servedComponents: readonly ComponentName[] = [
  "config",
  "decision",
  "export",
  "mapping",
  "redact",
  "user",
  "postgres",
  "pipeline",
  "fhir",
  "objectstore",
  "mysql",
];
