import GatehouseWire
/// Friendly names for anonymous accounts (OKLah US-ONB-002, BR-ONB-003): an adjective of
/// happiness or motivation and a cheerful noun, e.g. "Radiant Otter". The lists are curated to
/// hold nothing negative; 156 × 157 = 24,492 combinations.
public enum NameSuggester {
    /// Three distinct names, no word repeated among them.
    public static func suggestions(count: Int = 3, using generator: inout some RandomNumberGenerator) -> [String] {
        let adjectives = Self.adjectives.shuffled(using: &generator).prefix(count)
        let nouns = Self.nouns.shuffled(using: &generator).prefix(count)
        return zip(adjectives, nouns).map { "\($0) \($1)" }
    }

    public static func suggestions(count: Int = 3) -> [String] {
        var generator = SystemRandomNumberGenerator()
        return suggestions(count: count, using: &generator)
    }

    public static let adjectives: [String] = [
        "Adventurous", "Agile", "Amazing", "Ambitious", "Amiable", "Awesome", "Balanced", "Beaming", "Blazing",
        "Blissful", "Bold", "Bouncy", "Brave", "Breezy", "Bright", "Brilliant", "Bubbly", "Buoyant", "Calm", "Candid",
        "Capable", "Careful", "Caring", "Charming", "Cheerful", "Cheery", "Clever", "Confident", "Courageous", "Cozy",
        "Creative", "Curious", "Daring", "Dazzling", "Dedicated", "Delightful", "Determined", "Devoted", "Diligent",
        "Dreamy", "Driven", "Dynamic", "Eager", "Earnest", "Easygoing", "Ebullient", "Elated", "Electric", "Eloquent",
        "Energetic", "Enthusiastic", "Epic", "Excited", "Fabulous", "Faithful", "Fantastic", "Fearless", "Festive",
        "Fiery", "Flourishing", "Focused", "Fortunate", "Friendly", "Fun", "Gallant", "Generous", "Gentle", "Genuine",
        "Gleaming", "Glowing", "Golden", "Gracious", "Grateful", "Great", "Happy", "Hardy", "Harmonious", "Heartfelt",
        "Hearty", "Helpful", "Heroic", "Honest", "Hopeful", "Humble", "Inspired", "Jolly", "Jovial", "Joyful", "Joyous",
        "Jubilant", "Keen", "Kind", "Kindhearted", "Lively", "Lovely", "Loyal", "Lucky", "Luminous", "Magnificent",
        "Majestic", "Mellow", "Merry", "Mighty", "Mindful", "Motivated", "Nimble", "Noble", "Optimistic", "Passionate",
        "Patient", "Peaceful", "Perky", "Playful", "Plucky", "Polished", "Positive", "Proud", "Quick", "Radiant",
        "Ready", "Relaxed", "Resilient", "Resolute", "Sincere", "Sparkling", "Spirited", "Splendid", "Sprightly",
        "Steady", "Stellar", "Strong", "Sunlit", "Sunny", "Super", "Supportive", "Swift", "Tenacious", "Thankful",
        "Thoughtful", "Thriving", "Tranquil", "Triumphant", "Trusty", "Upbeat", "Valiant", "Vibrant", "Vigorous",
        "Vivid", "Warm", "Whimsical", "Wise", "Witty", "Wonderful", "Zealous", "Zesty", "Zippy",
    ]

    public static let nouns: [String] = [
        "Acorn", "Adventurer", "Album", "Anchor", "Arrow", "Aurora", "Badger", "Balloon", "Beacon", "Bear", "Bee",
        "Bell", "Blossom", "Bluebird", "Bonfire", "Breeze", "Brook", "Butterfly", "Canyon", "Cardinal", "Carnival",
        "Cedar", "Champion", "Cheetah", "Cherry", "Clover", "Comet", "Compass", "Coral", "Cosmos", "Cottage", "Crane",
        "Creek", "Cricket", "Crystal", "Daisy", "Dancer", "Dawn", "Daydream", "Deer", "Diamond", "Dolphin", "Dove",
        "Dragonfly", "Dreamer", "Eagle", "Echo", "Ember", "Explorer", "Falcon", "Feather", "Fern", "Firefly", "Flame",
        "Flower", "Fountain", "Fox", "Galaxy", "Garden", "Gazelle", "Gem", "Glacier", "Harbor", "Harmony", "Harvest",
        "Hawk", "Heart", "Hero", "Heron", "Horizon", "Hummingbird", "Island", "Jaguar", "Jasmine", "Journey", "Kite",
        "Koala", "Lagoon", "Lantern", "Lark", "Laurel", "Legend", "Lighthouse", "Lily", "Lion", "Lotus", "Lynx",
        "Maple", "Meadow", "Melody", "Meteor", "Mountain", "Nightingale", "Oak", "Ocean", "Orchard", "Orchid", "Otter",
        "Owl", "Panda", "Panther", "Parrot", "Pathfinder", "Peach", "Pebble", "Pelican", "Penguin", "Phoenix", "Pilot",
        "Pine", "Pioneer", "Planet", "Poppy", "Prairie", "Puffin", "Rainbow", "Raven", "River", "Robin", "Rocket",
        "Rose", "Sailor", "Sapphire", "Seagull", "Seedling", "Sequoia", "Skylark", "Snowflake", "Spark", "Sparrow",
        "Sprout", "Squirrel", "Star", "Starlight", "Stream", "Summit", "Sunbeam", "Sunflower", "Sunrise", "Swan",
        "Thunder", "Tiger", "Tortoise", "Trailblazer", "Traveler", "Tulip", "Turtle", "Valley", "Voyage", "Voyager",
        "Waterfall", "Wave", "Willow", "Wind", "Wolf", "Wren", "Zephyr",
    ]
}
