/* The ctl permission matrix, as the kernel would rule on the same request. */
#include <errno.h>

#include "ctl_perm.h"
#include "unit.h"

static struct perm_facts user(int cur, int want)
{
	struct perm_facts f = {
		.peer_euid = 1000, .target_ruid = 1000, .target_euid = 1000,
		.cur = cur, .want = want,
	};

	return f;
}

static int check(const struct perm_facts *f)
{
	const char *why = NULL;
	int r = perm_check(f, &why);

	if (r < 0)
		assert_non_null(why);
	return r;
}

static void own_task_raise_allowed(void **state)
{
	struct perm_facts f = user(0, 5);

	assert_int_equal(check(&f), 0);
	f = user(5, 5);
	assert_int_equal(check(&f), 0);
	f = user(-3, 0); /* reset of a value someone privileged lowered: a raise */
	assert_int_equal(check(&f), 0);
}

static void own_task_lower_refused(void **state)
{
	struct perm_facts f = user(0, -1);

	assert_int_equal(check(&f), -EPERM);
	f = user(10, 9);
	assert_int_equal(check(&f), -EPERM);
	f = user(10, 0); /* reset from 10 lowers it */
	assert_int_equal(check(&f), -EPERM);
}

static void rlimit_nice_allows_lowering_to_its_bound(void **state)
{
	struct perm_facts f = user(10, 5);

	f.rlim_nice = 15; /* the kernel lets this user renice down to 20 - 15 = 5 */
	assert_int_equal(check(&f), 0);
	f.want = 4;
	assert_int_equal(check(&f), -EPERM);
	f.rlim_nice = 40;
	f.want = -20;
	assert_int_equal(check(&f), 0);
}

static void other_users_task_refused(void **state)
{
	struct perm_facts f = user(0, 10);

	f.target_ruid = f.target_euid = 1001;
	assert_int_equal(check(&f), -EPERM);
	f.target_euid = 1000; /* euid matches: the kernel's check_same_owner */
	assert_int_equal(check(&f), 0);
}

static void cap_sys_nice_allows_any(void **state)
{
	struct perm_facts f = user(0, -20);

	f.target_ruid = f.target_euid = 0;
	f.cap_sys_nice = true;
	assert_int_equal(check(&f), 0);
}

static void admin_allows_any(void **state)
{
	struct perm_facts f = user(19, -20);

	f.target_ruid = f.target_euid = 4242;
	f.admin = true;
	assert_int_equal(check(&f), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(own_task_raise_allowed),
		cmocka_unit_test(own_task_lower_refused),
		cmocka_unit_test(rlimit_nice_allows_lowering_to_its_bound),
		cmocka_unit_test(other_users_task_refused),
		cmocka_unit_test(cap_sys_nice_allows_any),
		cmocka_unit_test(admin_allows_any),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
