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
#include <openssl/cms.h>
#include <openssl/bio.h>
#include <openssl/ssl.h>

// TLS (the web page's server): the calls that are macros over SSL_CTX_ctrl / BIO_ctrl and so do not reach Swift.
static inline int hearth_ssl_ctx_set_min_tls12(SSL_CTX *ctx) { return (int)SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION); }
static inline long hearth_bio_pending(BIO *bio) { return (long)BIO_ctrl_pending(bio); }
static inline int hearth_ssl_ctx_add_chain_certificate(SSL_CTX *ctx, X509 *x509) { return (int)SSL_CTX_add0_chain_cert(ctx, x509); }
static inline int hearth_bio_set_mem_eof_return(BIO *bio, int v) { return (int)BIO_set_mem_eof_return(bio, v); }

// Selections for EVP_PKEY_fromdata, whose macros are composed of other macros and so do not reach Swift.
static const int hearth_evp_pkey_public_key = EVP_PKEY_PUBLIC_KEY;
static const int hearth_evp_pkey_keypair = EVP_PKEY_KEYPAIR;

// Names OpenSSL keeps pointers to rather than copying (OSSL_PARAM keys, an EVP_PKEY_CTX's key type): they must
// outlive the call, which a Swift string lent to C does not, so they come from here as static C literals.
static inline const char *hearth_param_group_name(void) { return OSSL_PKEY_PARAM_GROUP_NAME; }
static inline const char *hearth_param_public_key(void) { return OSSL_PKEY_PARAM_PUB_KEY; }
static inline const char *hearth_param_private_key(void) { return OSSL_PKEY_PARAM_PRIV_KEY; }
static inline const char *hearth_key_type_ec(void) { return "EC"; }
