"""Password hashes as Firebase Auth and Supabase Auth store them, made by independent
libraries from PyPI, for the import tests (Server/Tests/GatehouseServerTests/ImportTests.swift).

    foreign_hashes.py firebase PASSWORD SALT_B64 SIGNER_KEY_B64 SALT_SEPARATOR_B64 ROUNDS MEM_COST
        prints Firebase's modified-scrypt hash (base64), made with firebase-scrypt and checked
        with its verify_password.
    foreign_hashes.py bcrypt PASSWORD PREFIX
        prints a bcrypt hash with PREFIX 2a or 2b (cost 4), made with the bcrypt package.
"""
import base64
import sys

import bcrypt
import firebase_scrypt


def firebase(password, salt, signer_key, separator, rounds, mem_cost):
    derived = firebase_scrypt.generate_derived_key(password, salt, separator, int(rounds), int(mem_cost))
    digest = base64.b64encode(firebase_scrypt.encrypt(base64.b64decode(signer_key), derived)).decode()
    assert firebase_scrypt.verify_password(password, digest, salt, separator, signer_key, int(rounds), int(mem_cost))
    return digest


def main(argv):
    if argv[:1] == ["firebase"] and len(argv) == 7:
        print(firebase(*argv[1:]))
    elif argv[:1] == ["bcrypt"] and len(argv) == 3:
        hashed = bcrypt.hashpw(argv[1].encode(), bcrypt.gensalt(rounds=4, prefix=argv[2].encode())).decode()
        assert bcrypt.checkpw(argv[1].encode(), hashed.encode())
        print(hashed)
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv[1:])
