/**
 * Copies a client's member into an object the gateway builds. A JSON body may carry a member
 * named `__proto__` (JSON.parse makes it an own member); assigning it with `obj[key] = value`
 * would set the object's prototype instead, so the member would be lost and the chat log would
 * refuse the object. It is defined as an own member, as JSON.parse made it.
 */
export function setMember<T>(obj: Record<string, T>, key: string, value: T): void {
  if (key === '__proto__') {
    Object.defineProperty(obj, key, { value, enumerable: true, writable: true, configurable: true });
  } else {
    obj[key] = value;
  }
}
