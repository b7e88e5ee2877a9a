import Foundation
import GatehouseCore
import GatehouseWire
import Testing

/// Refresh-token rotation: the newest token rotates, a rotated one repeats its successor within
/// the reuse interval and ends the session after it.
@Suite struct RefreshRotationPolicyTests {
    static let now = Date(timeIntervalSince1970: 1_800_000_000)
    let settings = TokenSettings()
    let session = Session(userID: .random(), provider: .email, createdAt: now.addingTimeInterval(-3_600))

    func token(rotatedAgo: TimeInterval? = nil, expiresIn: TimeInterval = 86_400) -> RefreshTokenRecord {
        RefreshTokenRecord(
            hash: [1], sessionID: session.id, issuedAt: Self.now.addingTimeInterval(-60), expiresAt: Self.now.addingTimeInterval(expiresIn),
            rotatedAt: rotatedAgo.map { Self.now.addingTimeInterval(-$0) })
    }

    func decide(_ token: RefreshTokenRecord, session: Session? = nil) -> RefreshDecision {
        RefreshRotationPolicy.decide(token: token, session: session ?? self.session, now: Self.now, settings: settings)
    }

    @Test func theNewestTokenRotatesUntilItExpires() {
        #expect(decide(token()) == .rotate)
        #expect(decide(token(expiresIn: 0)) == .expired)
    }

    @Test func aRotatedTokenRepeatsWithinTheIntervalAndIsReuseAfterIt() {
        #expect(decide(token(rotatedAgo: 0)) == .repeatSuccessor)
        #expect(decide(token(rotatedAgo: TimeInterval(settings.refreshReuseIntervalSeconds))) == .repeatSuccessor)
        #expect(decide(token(rotatedAgo: TimeInterval(settings.refreshReuseIntervalSeconds) + 1)) == .reuseDetected)
    }

    @Test func anEndedSessionEndsEveryToken() {
        var revoked = session
        revoked.revokedAt = Self.now.addingTimeInterval(-1)
        #expect(decide(token(), session: revoked) == .expired)
        #expect(decide(token(rotatedAgo: 3_600), session: revoked) == .expired)
    }

    @Test func theTypedSessionInitializerStoresTheRawProvider() {
        #expect(session.provider == "email" && Session(userID: .random(), provider: .anonymous, createdAt: Self.now).provider == "anonymous")
    }
}

/// Lockout (AT-07-06): from the threshold on, each failure doubles the wait, up to the maximum.
@Suite struct LockoutPolicyTests {
    static let now = Date(timeIntervalSince1970: 1_800_000_000)
    let settings = ThrottlingSettings()  // 5 failures, 30 s doubling, 3600 s at most

    @Test func theWaitDoublesFromTheThresholdUpToTheMaximum() {
        func wait(_ failures: Int) -> TimeInterval? {
            LockoutPolicy.lock(failures: failures, now: Self.now, settings: settings).map { $0.timeIntervalSince(Self.now) }
        }
        #expect(wait(4) == nil)
        #expect([5, 6, 7, 8, 12, 13, 1_000].map(wait) == [30, 60, 120, 240, 3_600, 3_600, 3_600])
    }

    @Test func theScheduleIsTheSameWaitsAsATable() {
        let schedule = LockoutPolicy.schedule(settings)
        #expect(schedule == LockSchedule(threshold: 5, waits: [30, 60, 120, 240, 480, 960, 1_920, 3_600]))
        #expect(schedule.wait(failures: 4) == nil && schedule.wait(failures: 6) == 60 && schedule.wait(failures: 99) == 3_600)
    }

    @Test func onlyTheFailureThatLockedAnnouncesAWait() {
        let locked = Self.now.addingTimeInterval(29.2)
        #expect(LockoutPolicy.wait(after: .allowed(failures: 5, lockedUntil: locked), at: Self.now, settings: settings) == 30)
        #expect(LockoutPolicy.wait(after: .allowed(failures: 3, lockedUntil: nil), at: Self.now, settings: settings) == nil)
        #expect(LockoutPolicy.wait(after: .locked(until: locked), at: Self.now, settings: settings) == nil)
        #expect(LockoutPolicy.wait(until: locked, at: Self.now) == 30)
        // A lock that ended as the request arrived still says at least one second.
        #expect(LockoutPolicy.wait(until: Self.now, at: Self.now) == 1)
    }
}

/// The magic link's code: wrong guesses count against the preset's attempts; the last one kills it.
@Suite struct MagicCodePolicyTests {
    static let now = Date(timeIntervalSince1970: 1_800_000_000)

    func token(attempts: Int = 0, used: Bool = false, expired: Bool = false) -> EmailToken {
        EmailToken(
            hash: [1], purpose: .magicLink, userID: nil, email: "a@example.com", normalizedEmail: "a@example.com", codeAttempts: attempts,
            createdAt: Self.now.addingTimeInterval(-60), expiresAt: Self.now.addingTimeInterval(expired ? 0 : 600),
            usedAt: used ? Self.now : nil)
    }

    @Test func aLinkIsRefusedForWhatHappenedToIt() {
        #expect(MagicCodePolicy.refusal(token(attempts: 4), at: Self.now, maxAttempts: 5) == nil)
        #expect(MagicCodePolicy.refusal(token(expired: true), at: Self.now, maxAttempts: 5) == .expired)
        #expect(MagicCodePolicy.refusal(token(attempts: 4, used: true), at: Self.now, maxAttempts: 5) == .invalid)
        #expect(MagicCodePolicy.refusal(token(attempts: 5, used: true), at: Self.now, maxAttempts: 5) == .exhausted)
    }

    @Test func aCodeWithNoAttemptLeftIsExhaustedUnlessItWasUsedOrExpiredMeanwhile() {
        #expect(MagicCodePolicy.isExhausted(unreserved: token(attempts: 5), at: Self.now, maxAttempts: 5))
        #expect(MagicCodePolicy.isExhausted(unreserved: token(attempts: 5, expired: true), at: Self.now, maxAttempts: 5))
        #expect(!MagicCodePolicy.isExhausted(unreserved: token(attempts: 1, used: true), at: Self.now, maxAttempts: 5))
        #expect(!MagicCodePolicy.isExhausted(unreserved: token(attempts: 1, expired: true), at: Self.now, maxAttempts: 5))
    }

    @Test func theLastWrongCodeKillsTheLink() {
        #expect((1...5).map { MagicCodePolicy.wrongCode(attempt: $0, maxAttempts: 5) } == [
            .retry(attemptsLeft: 4), .retry(attemptsLeft: 3), .retry(attemptsLeft: 2), .retry(attemptsLeft: 1), .exhausted,
        ])
    }
}
