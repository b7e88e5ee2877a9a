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
