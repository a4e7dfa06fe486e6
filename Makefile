# Front end of tools/workspace; "make help" lists the verbs.
# Settings: PREFIX=/path (install), PG_DEBIAN_VERSION=x (another served
# upstream version), FORCE=1 (apply over unrefreshed edits), TEST_USER=name.
VERBS := deps fetch apply refresh export verify verify-patch-builds verify-autoconf verify-docs verify-pgindent verify-guide build install check demo bench start stop clean help

ifdef PG_DEBIAN_VERSION
export OVERRIDE_PG_DEBIAN_VERSION := $(PG_DEBIAN_VERSION)
endif
ifdef PG_ORIG_SHA256
export OVERRIDE_PG_ORIG_SHA256 := $(PG_ORIG_SHA256)
endif

.PHONY: $(VERBS)
$(VERBS):
	@tools/workspace $@
