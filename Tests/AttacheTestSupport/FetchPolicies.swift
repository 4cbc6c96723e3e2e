import AttacheFetch

/// The default policy with loopback allowed (test servers live there) and short retries.
public func loopbackPolicy(_ change: (inout FetchPolicy) -> Void = { _ in }) -> FetchPolicy {
    var policy = FetchPolicy()
    policy.allowLoopback = true
    policy.retryDelay = .milliseconds(20)
    change(&policy)
    return policy
}
