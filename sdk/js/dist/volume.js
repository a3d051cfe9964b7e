import { ConnectionConfig } from './connection.js';
import { NotFoundError } from './errors.js';
/**
 * A named volume of this API key (E2B's `Volume`): storage that outlives
 * its sandboxes, mounted at a path under /home/user
 * (`Sandbox.create({ volumes: { data: '/home/user/data' } })`, or E2B's
 * `volumeMounts: { '/home/user/data': volume }`). `sizeMB` is its quota.
 */
export class Volume {
    name;
    sizeMB;
    usedBytes;
    createdAt;
    /** How many live sandboxes mount it. */
    mounts;
    /** @internal */
    constructor(v) {
        this.name = String(v.name);
        this.sizeMB = Number(v.size_mb ?? 0);
        this.usedBytes = Number(v.used_bytes ?? 0);
        this.createdAt = new Date(v.created_at);
        this.mounts = Number(v.mounts ?? 0);
    }
    /** Makes a volume; `sizeMB` defaults to the gateway's (usually 1024). A taken name is a SandboxError with status 409. */
    static async create(name, opts) {
        const body = { name };
        if (opts?.sizeMB !== undefined)
            body.size_mb = opts.sizeMB;
        return new Volume(await new ConnectionConfig(opts).request('POST', '/v1/volumes', 'json', { json: body, ok: [201] }));
    }
    /** This key's volumes, by name. */
    static async list(opts) {
        const out = await new ConnectionConfig(opts).request('GET', '/v1/volumes', 'json');
        return (out?.volumes ?? []).map((v) => new Volume(v));
    }
    /** One volume (a NotFoundError when this key has none of that name). */
    static async getInfo(name, opts) {
        return new Volume(await new ConnectionConfig(opts).request('GET', '/v1/volumes/' + encodeURIComponent(name), 'json'));
    }
    /** Deletes a volume and what it holds; false if there was none. A mounted one is a SandboxError with status 409. */
    static async destroy(name, opts) {
        try {
            await new ConnectionConfig(opts).request('DELETE', '/v1/volumes/' + encodeURIComponent(name), 'json', { ok: [204] });
            return true;
        }
        catch (e) {
            if (e instanceof NotFoundError)
                return false;
            throw e;
        }
    }
}
