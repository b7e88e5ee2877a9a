import Foundation
import GatehouseClient
import Testing

@Suite struct ClientConfigurationTests {
    @Test(arguments: ["https://auth.example.com", "http://127.0.0.1:8080", "http://localhost:9000", "http://[::1]:8080"])
    func acceptsSecureOrLoopbackURLs(_ text: String) throws {
        let configuration = try ClientConfiguration(baseURL: URL(string: text)!)
        #expect(configuration.baseURL.absoluteString == text)
    }

    @Test(arguments: ["http://auth.example.com", "http://10.0.0.5", "ftp://auth.example.com", "http://127.example.com"])
    func refusesInsecureURLs(_ text: String) {
        #expect(throws: GatehouseClientError.self) {
            try ClientConfiguration(baseURL: URL(string: text)!)
        }
    }
}

/// The snapshot's `source` as the SDK's `PlanSource` (issue 59): every source the server names,
/// Google Play's included, reads as its case; one this SDK does not know reads as nil.
@Suite struct PlanSourceTests {
    @Test func everySourceTheServerNamesReadsAsItsCase() throws {
        for source in PlanSource.allCases {
            let json = #"{"source": "\#(source.rawValue)", "product_id": "p", "status": "active", "renews_at": null, "expires_at": null, "will_renew": true}"#
            let info = try JSONDecoder().decode(SubscriptionInfo.self, from: Data(json.utf8))
            #expect(info.planSource == source)
        }
        #expect(PlanSource(rawValue: "google_play") == .googlePlay)
        let unknown = #"{"source": "amazon", "product_id": "p", "status": "active", "renews_at": null, "expires_at": null, "will_renew": true}"#
        #expect(try JSONDecoder().decode(SubscriptionInfo.self, from: Data(unknown.utf8)).planSource == nil)
        let test = #"{"source": "google_play", "product_id": "p", "status": "active", "renews_at": null, "expires_at": null, "will_renew": true, "test_purchase": true}"#
        #expect(try JSONDecoder().decode(SubscriptionInfo.self, from: Data(test.utf8)).testPurchase == true)
    }
}
