/// The tables of campaigns shared by batch workers (``CampaignQueue``).
enum CampaignSchema {
    static let statements = [
        """
        CREATE TABLE IF NOT EXISTS attache_campaign (
            name text PRIMARY KEY, created bigint NOT NULL, items integer NOT NULL)
        """,
        """
        CREATE TABLE IF NOT EXISTS attache_job (
            campaign text NOT NULL REFERENCES attache_campaign (name) ON DELETE CASCADE,
            seq integer NOT NULL, reference text NOT NULL, url text, output_name text NOT NULL,
            payload bytea NOT NULL, read_error text,
            state text NOT NULL DEFAULT 'pending', owner text, lease_until bigint,
            attempts integer NOT NULL DEFAULT 0, completions integer NOT NULL DEFAULT 0,
            record text, output bytea, failed boolean, finished bigint,
            PRIMARY KEY (campaign, seq))
        """,
        "CREATE INDEX IF NOT EXISTS attache_job_state ON attache_job (campaign, state, seq)",
    ]
}
