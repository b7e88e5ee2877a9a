"""Phone numbers with the region and type Google's libphonenumber (the `phonenumbers` package)
gives them, for PhoneNumberTests.kindsAgreeWithLibphonenumber
(Server/Tests/GatehouseServerTests/PhoneNumberTests.swift), which checks `PhoneNumber.region`
and `PhoneNumber.kind` against them.

    phone_kinds.py
        prints {"cases": [{"e164", "region", "kind"}]}: `region` is what region_code_for_number
        says (null when no region of the calling code fits, "001" for the non-geographic codes),
        `kind` what number_type says, as the `PhoneNumberKind` raw value ("unknown" for UNKNOWN).

The numbers, the same on every run (seeded): the example number of every type of every region
and non-geographic code, and each with its last one to four digits drawn at random; every NANP
area code from 200 to 999 with a few exchanges (valid-looking ones and ones beginning 0 or 1);
and numbers that are no assigned number: each region's example numbers with their first digits
changed, digits added or taken away, and +1 numbers of area codes beginning 0 or 1. Each number
is written as phonenumbers writes it in E.164 (parsing that gives the same number back).

Left out, as `PhoneNumber.parse` reads them otherwise (its approximations, documented in
PhoneNumber.swift and PhoneNumberPlans.swift, are not what this checks): valid numbers of a
length the main region of their calling code does not have (Canada's 7-digit 310 numbers: parse
knows the main region's lengths only), and numbers beginning with the main region's trunk prefix
where what follows it has a possible length (Belarus's toll-free 8 801…: parse strips the 8,
libphonenumber keeps it as the rest matches none of the region's patterns). A number parse
refuses has no kind to compare: PhoneNumberTests takes a refusal as agreeing with "unknown" only.
"""
import json
import random
import sys

import phonenumbers
from phonenumbers import PhoneMetadata, PhoneNumberFormat, PhoneNumberType
from phonenumbers.phonenumberutil import COUNTRY_CODES_FOR_NON_GEO_REGIONS, SUPPORTED_REGIONS

# The descriptions of the metadata that have example numbers.
DESCRIPTIONS = [
    "fixed_line", "mobile", "toll_free", "premium_rate", "shared_cost", "personal_number", "voip",
    "pager", "uan", "voicemail",
]
VARIANTS = 4

rng = random.Random(9043)


def kind_name(number_type):
    """A PhoneNumberType's name as the `PhoneNumberKind` raw value."""
    for name in dir(PhoneNumberType):
        if name.isupper() and getattr(PhoneNumberType, name) == number_type:
            return name.lower()
    raise ValueError(number_type)


def examples(metadata):
    """The national significant example numbers of every type of `metadata`."""
    found = []
    for attribute in ["general_desc"] + DESCRIPTIONS:
        desc = getattr(metadata, attribute)
        if desc is not None and desc.example_number:
            found.append(desc.example_number)
    return found


def random_digits(count):
    return "".join(rng.choice("0123456789") for _ in range(count))


def variants(national):
    """`national` with its last one to four digits drawn at random."""
    found = []
    for _ in range(VARIANTS):
        changed = rng.randint(1, min(4, len(national) - 1))
        found.append(national[:-changed] + random_digits(changed))
    return found


def unassigned(national):
    """`national` with its first one or two digits changed, and with digits added or taken away."""
    found = []
    for changed in (1, 2):
        if len(national) > changed:
            found.append(random_digits(changed) + national[changed:])
    found.append(national + random_digits(rng.randint(1, 2)))
    if len(national) > 3:
        found.append(national[:-rng.randint(1, 2)])
    return found


def nanp():
    """Every area code from 200 to 999 with valid-looking exchanges, and with exchanges and area
    codes libphonenumber knows are none."""
    found = []
    for area in range(200, 1000):
        for exchange in ("2345678", "5550123", "7654321", "9123456", rng.choice("01") + random_digits(6)):
            found.append("%d%s" % (area, exchange))
    for _ in range(40):
        found.append(rng.choice("01") + random_digits(9))
    return found


def read_otherwise(number, national, kind):
    """Whether `PhoneNumber.parse` would refuse a valid `number` or read it as another number."""
    main_region = phonenumbers.region_code_for_country_code(number.country_code)
    if main_region == "001":
        return False
    metadata = PhoneMetadata.metadata_for_region(main_region)
    lengths = metadata.general_desc.possible_length
    if kind != "unknown" and len(national) not in lengths:
        return True
    trunk = metadata.national_prefix
    return bool(trunk) and national.startswith(trunk) and len(national) - len(trunk) in lengths


def main():
    candidates = []  # (calling code, national significant number)
    for region in sorted(SUPPORTED_REGIONS):
        metadata = PhoneMetadata.metadata_for_region(region)
        for national in examples(metadata):
            candidates.append((metadata.country_code, national))
            candidates += [(metadata.country_code, v) for v in variants(national)]
            candidates += [(metadata.country_code, v) for v in unassigned(national)]
    for code in sorted(COUNTRY_CODES_FOR_NON_GEO_REGIONS):
        metadata = PhoneMetadata.metadata_for_nongeo_region(code)
        for national in examples(metadata):
            candidates.append((code, national))
            candidates += [(code, v) for v in variants(national)]
            candidates += [(code, v) for v in unassigned(national)]
    candidates += [(1, national) for national in nanp()]

    cases, seen = [], set()
    for code, national in candidates:
        try:
            number = phonenumbers.parse("+%d%s" % (code, national), None)
        except phonenumbers.NumberParseException:
            continue
        e164 = phonenumbers.format_number(number, PhoneNumberFormat.E164)
        if e164 in seen or phonenumbers.parse(e164, None) != number:
            continue
        seen.add(e164)
        kind = kind_name(phonenumbers.number_type(number))
        if read_otherwise(number, phonenumbers.national_significant_number(number), kind):
            continue
        cases.append({"e164": e164, "region": phonenumbers.region_code_for_number(number), "kind": kind})
    json.dump({"cases": cases}, sys.stdout, indent=0)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
