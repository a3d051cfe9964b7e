import { type ConnectionOpts } from './connection.js';
/**
 * A named volume of this API key (E2B's `Volume`): storage that outlives
 * its sandboxes, mounted at a path under /home/user
 * (`Sandbox.create({ volumes: { data: '/home/user/data' } })`, or E2B's
 * `volumeMounts: { '/home/user/data': volume }`). `sizeMB` is its quota.
 */
export declare class Volume {
    readonly name: string;
    readonly sizeMB: number;
    readonly usedBytes: number;
    readonly createdAt: Date;
    /** How many live sandboxes mount it. */
    readonly mounts: number;
    /** @internal */
    constructor(v: any);
    /** Makes a volume; `sizeMB` defaults to the gateway's (usually 1024). A taken name is a SandboxError with status 409. */
    static create(name: string, opts?: ConnectionOpts & {
        sizeMB?: number;
    }): Promise<Volume>;
    /** This key's volumes, by name. */
    static list(opts?: ConnectionOpts): Promise<Volume[]>;
    /** One volume (a NotFoundError when this key has none of that name). */
    static getInfo(name: string, opts?: ConnectionOpts): Promise<Volume>;
    /** Deletes a volume and what it holds; false if there was none. A mounted one is a SandboxError with status 409. */
    static destroy(name: string, opts?: ConnectionOpts): Promise<boolean>;
}
