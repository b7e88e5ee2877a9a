"""Phone numbers as people type them, with what Google's libphonenumber (the `phonenumbers`
package) makes of them, for PhoneNumberTests.agreesWithLibphonenumber
(Server/Tests/GatehouseServerTests/PhoneNumberTests.swift).

    phone_cases.py
        prints {"cases": [{"input", "region", "expect"}]}: `expect` is the E.164 form when
        phonenumbers parses `input` (with `region` as the default region) to a valid number,
        "refuse" when it cannot parse it or the result is not a possible number. Inputs it
        finds possible but invalid have no expectation and are left out.

Numbers start from phonenumbers' example numbers (fixed line, mobile, toll free), with their
last digits changed at random (seeded, so the cases are the same on every run), and are
written the ways people type them: E.164, international, national, behind an international
dialling prefix, with spaces, dashes, dots, parentheses and non-breaking spaces; impossible
ones have digits added or removed. Regions whose trunk prefix carries more than a trunk
prefix (AR's mobile 15, CO's carrier digit after the 0) are left out; BR is in, its numbers
typed without a carrier code.
"""
import json
import random
import sys

import phonenumbers
from phonenumbers import NumberParseException, PhoneMetadata, PhoneNumberFormat, PhoneNumberType

try:
    import re._parser as sre_parse
except ImportError:  # Python before 3.11
    import sre_parse

REGIONS = [
    "US", "CA", "GB", "DE", "FR", "IT", "ES", "NL", "SE", "NO", "DK", "CH", "AU", "NZ", "JP", "IN",
    "SG", "MY", "BR", "MX", "ZA", "IE", "PL", "AT", "BE", "PT", "FI", "RU", "KR", "HK", "IL", "TR",
    "PH", "TH", "CN", "KZ", "GG", "PR", "VA", "NG", "KE", "EG", "AE", "SA", "ID", "VN", "CL", "PE",
    "UA", "CZ", "HU", "GR", "RO", "TW",
]
TYPES = [PhoneNumberType.FIXED_LINE, PhoneNumberType.MOBILE, PhoneNumberType.TOLL_FREE]
VARIANTS_PER_TYPE = 6

rng = random.Random(43)


def expansions(pattern):
    """Every string a finite prefix pattern (digits, classes, groups, alternatives, `?`) matches."""
    def expand(tokens):
        results = [""]
        for op, arg in tokens:
            if op == sre_parse.LITERAL:
                options = [chr(arg)]
            elif op == sre_parse.IN:
                options = []
                for kind, value in arg:
                    if kind == sre_parse.LITERAL:
                        options.append(chr(value))
                    elif kind == sre_parse.RANGE:
                        options += [chr(c) for c in range(value[0], value[1] + 1)]
                    else:  # \d
                        options += list("0123456789")
            elif op == sre_parse.SUBPATTERN:
                options = expand(arg[3])
            elif op == sre_parse.BRANCH:
                options = [s for branch in arg[1] for s in expand(branch)]
            elif op in (sre_parse.MAX_REPEAT, sre_parse.MIN_REPEAT):
                low, high, sub = arg
                inner = expand(sub)
                options = [""] if low == 0 else []
                options += inner if high >= 1 else []
            else:
                raise ValueError(pattern)
            results = [a + b for a in results for b in options]
        return results
    return expand(sre_parse.parse(pattern))


def international_prefix(region):
    """A prefix people in `region` dial before a calling code: the preferred one, else one the
    metadata's pattern allows, picked at random."""
    metadata = PhoneMetadata.metadata_for_region(region)
    preferred = (metadata.preferred_international_prefix or "").replace("~", "")
    if preferred.isdigit():
        return preferred
    return rng.choice(expansions(metadata.international_prefix))


def expectation(text, region):
    try:
        number = phonenumbers.parse(text, region)
    except NumberParseException:
        return "refuse"
    if phonenumbers.is_valid_number(number):
        return phonenumbers.format_number(number, PhoneNumberFormat.E164)
    if not phonenumbers.is_possible_number(number):
        return "refuse"
    return None


def valid_variants(region, kind):
    """Up to VARIANTS_PER_TYPE valid numbers of `region` and `kind`: the example number with its
    last one to four digits drawn at random."""
    example = phonenumbers.example_number_for_type(region, kind)
    if example is None:
        return []
    code = example.country_code
    significant = phonenumbers.national_significant_number(example)
    found = {}
    for _ in range(60):
        if len(found) >= VARIANTS_PER_TYPE:
            break
        changed = rng.randint(1, min(4, len(significant) - 1))
        digits = significant[:-changed] + "".join(rng.choice("0123456789") for _ in range(changed))
        number = phonenumbers.parse("+%d%s" % (code, digits), None)
        if phonenumbers.is_valid_number(number) and phonenumbers.region_code_for_number(number) == region:
            found[digits] = number
    return list(found.values())


def punctuated(text):
    """`text` with its spaces typed another way."""
    style = rng.choice(["-", ".", "\u00a0", "  ", "", " - ", "/"])
    return text.replace(" ", style)


def grouped(digits):
    """`digits` in random groups of two to four, separated by spaces."""
    groups, index = [], 0
    while index < len(digits):
        size = rng.randint(2, 4)
        groups.append(digits[index:index + size])
        index += size
    return " ".join(groups)


def typed_valid(number, region):
    """The ways people type a valid `number` of `region`, each with the default region used."""
    code = str(number.country_code)
    metadata = PhoneMetadata.metadata_for_region(region)
    international = phonenumbers.format_number(number, PhoneNumberFormat.INTERNATIONAL)
    national = phonenumbers.format_number(number, PhoneNumberFormat.NATIONAL)
    after_code = international[len("+" + code):].strip()
    other = rng.choice([r for r in REGIONS if r != region])
    ways = [
        (phonenumbers.format_number(number, PhoneNumberFormat.E164), region),
        (international, region),
        (national, region),
        (international_prefix(region) + " " + code + " " + after_code, region),
        (international, other),
        (international_prefix(other) + " " + code + " " + after_code, other),
        (punctuated(international), rng.choice([region, other])),
        (punctuated(national), region),
        (" " + national.replace(" ", "") + " ", region),
        ("+" + code + grouped(phonenumbers.national_significant_number(number)), region),
    ]
    trunk = metadata.national_prefix
    if trunk:
        ways.append(("+%s (%s) %s" % (code, trunk, after_code), rng.choice([region, other])))
    if code == "1":
        ways.append(("1 " + national, region))
        ways.append(("1-" + national.replace("(", "").replace(") ", "-"), region))
    return ways


def typed_impossible(number, region):
    """`number` with one to three digits added or removed, typed in the same ways."""
    code = str(number.country_code)
    significant = phonenumbers.national_significant_number(number)
    count = rng.randint(1, 3)
    if rng.random() < 0.5 and len(significant) > count + 1:
        digits = significant[:-count]
    else:
        digits = significant + "".join(rng.choice("0123456789") for _ in range(count))
    trunk = PhoneMetadata.metadata_for_region(region).national_prefix or ""
    return [
        ("+" + code + digits, region),
        ("+" + code + " " + grouped(digits), region),
        (trunk + grouped(digits), region),
        (international_prefix(region) + " " + code + " " + grouped(digits), region),
    ]


def main():
    cases, seen = [], set()

    def add(text, region):
        if (text, region) in seen:
            return
        seen.add((text, region))
        expect = expectation(text, region)
        if expect is not None:
            cases.append({"input": text, "region": region, "expect": expect})

    for region in REGIONS:
        for kind in TYPES:
            for number in valid_variants(region, kind):
                for text, default in typed_valid(number, region):
                    add(text, default)
                for text, default in typed_impossible(number, region):
                    add(text, default)
        # Calling codes no region has, and input that is no number at all.
        add("+%d %s" % (rng.choice([999, 969, 801, 210]), grouped("12345678")), region)
        add("not a number", region)
    json.dump({"cases": cases}, sys.stdout, indent=0)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
