#include <openssl/evp.h>
#include <openssl/ec.h>
#include <openssl/ecdsa.h>
#include <openssl/bn.h>
#include <openssl/rand.h>
#include <openssl/err.h>
#include <openssl/kdf.h>
#include <openssl/hmac.h>
#include <openssl/core_names.h>
#include <openssl/params.h>
#include <openssl/param_build.h>
#include <openssl/asn1.h>
#include <openssl/objects.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <openssl/pem.h>
#include <openssl/obj_mac.h>

// Selections for EVP_PKEY_fromdata, whose macros are composed of other macros and so do not reach Swift.
static const int hearth_evp_pkey_public_key = EVP_PKEY_PUBLIC_KEY;
static const int hearth_evp_pkey_keypair = EVP_PKEY_KEYPAIR;
