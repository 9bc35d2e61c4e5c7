/** What a user id can be (as the /user API takes them): 1 to 200 characters, no control characters. */
const userIdShape = /^[^\u0000-\u001f]{1,200}$/;

/**
 * Whether a resource-context value can name a user. One that cannot names no one, so its record
 * or row is dropped: every door (records, JSON and CSV documents, pipelines) reads ids this way.
 * Its own module so CSV worker threads load nothing else.
 */
export function canNameUser(value: string): boolean {
  return userIdShape.test(value);
}
