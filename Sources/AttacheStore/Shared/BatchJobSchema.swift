/// The tables of campaigns shared by batch workers (see `AttacheBatch`'s shared queue).
enum BatchJobSchema {
    static let statements = [
        """
        CREATE TABLE IF NOT EXISTS attache_campaign (
            name text PRIMARY KEY, created bigint NOT NULL, items integer NOT NULL)
        """,
        """
        CREATE TABLE IF NOT EXISTS attache_job (
            campaign text NOT NULL REFERENCES attache_campaign (name) ON DELETE CASCADE,
            seq integer NOT NULL, input text NOT NULL, state text NOT NULL DEFAULT 'pending',
            owner text, lease_until bigint, attempts integer NOT NULL DEFAULT 0,
            result text, finished bigint, PRIMARY KEY (campaign, seq))
        """,
        "CREATE INDEX IF NOT EXISTS attache_job_pending ON attache_job (campaign, state, seq)",
    ]
}
