! Point-to-point, statuses, derived types, communicators, errors, strings
! and attributes through `use mpi`, at any number of ranks.  Every check
! that fails ends the job with a message (MPI_Abort); rank 0 prints
! "ok f_p2p" at the end.
! the callbacks' state, shared with the program
module f_p2p_state
  integer :: nerrors = 0, last_error = 0, ncopies = 0
end module

program f_p2p
  use mpi
  use f_p2p_state
  implicit none
  external :: count_errors, copy_double
  integer :: ierr, rank, nproc, right, left, i, n, idx, outcount
  integer :: st(MPI_STATUS_SIZE), sts(MPI_STATUS_SIZE, 4), reqs(4), indices(4)
  integer :: ibuf(10), rbuf(10)
  double precision :: dsend(5), drecv(5)
  logical :: flag

  call MPI_Init(ierr)
  call check(ierr == MPI_SUCCESS, 'MPI_Init')
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, nproc, ierr)
  right = mod(rank + 1, nproc)
  left = mod(rank + nproc - 1, nproc)

  ! blocking ring with a status: source, tag, count
  ibuf = [(rank * 100 + i, i = 1, 10)]
  rbuf = -1
  if (mod(rank, 2) == 0) then
    call MPI_Send(ibuf, 7, MPI_INTEGER, right, 10 + rank, MPI_COMM_WORLD, ierr)
    call MPI_Recv(rbuf, 10, MPI_INTEGER, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, st, ierr)
  else
    call MPI_Recv(rbuf, 10, MPI_INTEGER, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, st, ierr)
    call MPI_Send(ibuf, 7, MPI_INTEGER, right, 10 + rank, MPI_COMM_WORLD, ierr)
  end if
  call MPI_Get_count(st, MPI_INTEGER, n, ierr)
  call check(n == 7, 'MPI_Get_count of the ring message')
  call check(st(MPI_SOURCE) == left, 'status(MPI_SOURCE)')
  call check(st(MPI_TAG) == 10 + left, 'status(MPI_TAG)')
  call check(all(rbuf(1:7) == [(left * 100 + i, i = 1, 7)]) .and. all(rbuf(8:10) == -1), 'ring data')
  ! (the wildcards above must not meet the messages below)
  call MPI_Barrier(MPI_COMM_WORLD, ierr)

  ! nonblocking with a status array; Waitany/Waitsome count from 1
  dsend = [(rank + 0.5d0 * i, i = 1, 5)]
  call MPI_Irecv(drecv, 5, MPI_DOUBLE_PRECISION, left, 3, MPI_COMM_WORLD, reqs(1), ierr)
  call MPI_Irecv(rbuf, 10, MPI_INTEGER, right, 4, MPI_COMM_WORLD, reqs(2), ierr)
  call MPI_Isend(dsend, 5, MPI_DOUBLE_PRECISION, right, 3, MPI_COMM_WORLD, reqs(3), ierr)
  call MPI_Isend(ibuf, 3, MPI_INTEGER, left, 4, MPI_COMM_WORLD, reqs(4), ierr)
  call MPI_Waitall(4, reqs, sts, ierr)
  call check(ierr == MPI_SUCCESS, 'MPI_Waitall')
  call check(all(reqs == MPI_REQUEST_NULL), 'requests freed by Waitall')
  call check(sts(MPI_SOURCE, 1) == left .and. sts(MPI_TAG, 1) == 3, 'statuses(:,1)')
  call check(sts(MPI_SOURCE, 2) == right .and. sts(MPI_TAG, 2) == 4, 'statuses(:,2)')
  call MPI_Get_count(sts(:, 1), MPI_DOUBLE_PRECISION, n, ierr)
  call check(n == 5, 'Get_count of statuses(:,1)')
  call MPI_Get_count(sts(:, 2), MPI_INTEGER, n, ierr)
  call check(n == 3, 'Get_count of statuses(:,2)')
  call check(all(drecv == [(left + 0.5d0 * i, i = 1, 5)]), 'nonblocking doubles')
  call check(all(rbuf(1:3) == [(right * 100 + i, i = 1, 3)]), 'nonblocking integers')

  reqs = MPI_REQUEST_NULL
  call MPI_Irecv(rbuf, 1, MPI_INTEGER, left, 5, MPI_COMM_WORLD, reqs(3), ierr)
  call MPI_Send(rank, 1, MPI_INTEGER, right, 5, MPI_COMM_WORLD, ierr)
  call MPI_Waitany(4, reqs, idx, st, ierr)
  call check(idx == 3, 'Waitany index counts from 1')
  call check(rbuf(1) == left .and. st(MPI_SOURCE) == left, 'Waitany data and status')
  call MPI_Waitany(4, reqs, idx, st, ierr)
  call check(idx == MPI_UNDEFINED, 'Waitany with no active request')
  call MPI_Irecv(rbuf, 1, MPI_INTEGER, left, 6, MPI_COMM_WORLD, reqs(2), ierr)
  call MPI_Send(rank + 1, 1, MPI_INTEGER, right, 6, MPI_COMM_WORLD, ierr)
  call MPI_Waitsome(4, reqs, outcount, indices, MPI_STATUSES_IGNORE, ierr)
  call check(outcount == 1 .and. indices(1) == 2 .and. rbuf(1) == left + 1, 'Waitsome')

  ! Sendrecv, Probe/Iprobe (LOGICAL flag), Test, MPI_STATUS_IGNORE
  call MPI_Sendrecv(ibuf, 2, MPI_INTEGER, right, 7, rbuf, 10, MPI_INTEGER, left, 7, MPI_COMM_WORLD, st, ierr)
  call MPI_Get_count(st, MPI_INTEGER, n, ierr)
  call check(n == 2 .and. rbuf(2) == left * 100 + 2, 'Sendrecv')
  call MPI_Send(ibuf, 4, MPI_INTEGER, right, 8, MPI_COMM_WORLD, ierr)
  call MPI_Probe(left, 8, MPI_COMM_WORLD, st, ierr)
  call MPI_Get_count(st, MPI_INTEGER, n, ierr)
  call check(n == 4 .and. st(MPI_TAG) == 8, 'Probe')
  call MPI_Iprobe(left, 8, MPI_COMM_WORLD, flag, MPI_STATUS_IGNORE, ierr)
  call check(flag, 'Iprobe flag .true.')
  call MPI_Recv(rbuf, 4, MPI_INTEGER, left, 8, MPI_COMM_WORLD, MPI_STATUS_IGNORE, ierr)
  call MPI_Iprobe(left, 99, MPI_COMM_WORLD, flag, st, ierr)
  call check(.not. flag, 'Iprobe flag .false.')
  call MPI_Irecv(rbuf, 1, MPI_INTEGER, MPI_PROC_NULL, 0, MPI_COMM_WORLD, reqs(1), ierr)
  call MPI_Test(reqs(1), flag, st, ierr)
  call check(flag .and. st(MPI_SOURCE) == MPI_PROC_NULL, 'Test of a receive from MPI_PROC_NULL')

  call derived_types()
  call communicators()
  call errors_and_strings()
  call attributes()

  call MPI_Finalize(ierr)
  if (rank == 0) print '(a)', 'ok f_p2p'

contains

  include 'check.inc'

  ! a column of a matrix (vector type), a struct of an integer and a double
  ! placed by absolute addresses (MPI_BOTTOM), MPI_Type_size / extent
  subroutine derived_types()
    double precision :: a(4, 3), b(4, 3)
    integer :: vec, pair, sz, j, blens(2), types(2)
    integer(kind=MPI_ADDRESS_KIND) :: lb, ext, disp(2)
    ! changed by MPI through addresses the compiler cannot see
    integer, volatile :: ival
    double precision, volatile :: dval
    a = reshape([(dble(rank * 100 + j), j = 1, 12)], [4, 3])
    b = 0
    call MPI_Type_vector(3, 1, 4, MPI_DOUBLE_PRECISION, vec, ierr)
    call MPI_Type_commit(vec, ierr)
    call MPI_Type_size(vec, sz, ierr)
    call check(sz == 24, 'Type_size of a vector')
    call MPI_Type_get_extent(vec, lb, ext, ierr)
    call check(lb == 0 .and. ext == 8 * 9, 'Type_get_extent of a vector')
    ! row 2 of a goes to row 3 of b on the right neighbour
    call MPI_Sendrecv(a(2, 1), 1, vec, right, 20, b(3, 1), 1, vec, left, 20, MPI_COMM_WORLD, st, ierr)
    call check(all(b(3, :) == [(dble(left * 100 + 2 + 4 * j), j = 0, 2)]), 'vector type data')
    call check(all(b(1:2, :) == 0) .and. all(b(4, :) == 0), 'vector type left the rest alone')
    call MPI_Get_elements(st, MPI_DOUBLE_PRECISION, n, ierr)
    call check(n == 3, 'Get_elements of a vector')
    call MPI_Type_free(vec, ierr)
    call check(vec == MPI_DATATYPE_NULL, 'Type_free sets MPI_DATATYPE_NULL')

    call MPI_Get_address(ival, disp(1), ierr)
    call MPI_Get_address(dval, disp(2), ierr)
    blens = 1
    types = [MPI_INTEGER, MPI_DOUBLE_PRECISION]
    call MPI_Type_create_struct(2, blens, disp, types, pair, ierr)
    call MPI_Type_commit(pair, ierr)
    ival = rank + 7
    dval = rank * 0.25d0
    call MPI_Sendrecv_replace(MPI_BOTTOM, 1, pair, right, 21, left, 21, MPI_COMM_WORLD, st, ierr)
    call check(ival == left + 7 .and. dval == left * 0.25d0, 'struct type at MPI_BOTTOM')
    call MPI_Type_free(pair, ierr)
  end subroutine

  subroutine communicators()
    integer :: half, dup, hrank, hsize, res, color, sum
    color = mod(rank, 2)
    call MPI_Comm_split(MPI_COMM_WORLD, color, -rank, half, ierr)
    call MPI_Comm_rank(half, hrank, ierr)
    call MPI_Comm_size(half, hsize, ierr)
    call check(hsize == (nproc + 1 - color) / 2, 'Comm_split size')
    ! key -rank: the order is reversed
    call check(hrank == hsize - 1 - rank / 2, 'Comm_split order by key')
    call MPI_Allreduce(rank, sum, 1, MPI_INTEGER, MPI_SUM, half, ierr)
    call check(sum == sum_of_color(color), 'Allreduce on a split communicator')
    call MPI_Comm_dup(half, dup, ierr)
    call MPI_Comm_compare(half, dup, res, ierr)
    call check(res == MPI_CONGRUENT, 'Comm_compare of a dup')
    call MPI_Comm_compare(MPI_COMM_WORLD, MPI_COMM_WORLD, res, ierr)
    call check(res == MPI_IDENT, 'Comm_compare of the same')
    call MPI_Comm_free(dup, ierr)
    call check(dup == MPI_COMM_NULL, 'Comm_free sets MPI_COMM_NULL')
    call MPI_Comm_free(half, ierr)
  end subroutine

  integer function sum_of_color(c)
    integer, intent(in) :: c
    integer :: r
    sum_of_color = 0
    do r = c, nproc - 1, 2
      sum_of_color = sum_of_color + r
    end do
  end function

  subroutine errors_and_strings()
    character(len=MPI_MAX_ERROR_STRING) :: msg
    character(len=MPI_MAX_PROCESSOR_NAME) :: pname
    character(len=MPI_MAX_OBJECT_NAME) :: cname
    character(len=40) :: val
    integer :: slen, cls, eh, info, vlen, e2
    logical :: found
    call MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN, ierr)
    call MPI_Send(ibuf, 1, MPI_INTEGER, nproc + 3, 0, MPI_COMM_WORLD, ierr)
    call check(ierr /= MPI_SUCCESS, 'a send to a bad rank fails under MPI_ERRORS_RETURN')
    call MPI_Error_class(ierr, cls, e2)
    call check(cls == MPI_ERR_RANK, 'its class is MPI_ERR_RANK')
    msg = 'x'
    call MPI_Error_string(MPI_ERR_RANK, msg, slen, ierr)
    call check(slen > 0 .and. slen < len(msg), 'Error_string length')
    call check(index(msg(1:slen), 'rank') > 0, 'Error_string text: '//msg(1:slen))
    call check(msg(slen + 1:) == ' ', 'Error_string is blank-padded')
    ! a handler written in Fortran, called with the communicator and the code
    call MPI_Comm_create_errhandler(count_errors, eh, ierr)
    call MPI_Comm_set_errhandler(MPI_COMM_WORLD, eh, ierr)
    nerrors = 0
    call MPI_Send(ibuf, 1, MPI_INTEGER, 0, -5, MPI_COMM_WORLD, ierr)
    call check(nerrors == 1 .and. last_error == MPI_ERR_TAG, 'Fortran error handler called')
    call MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL, ierr)
    call MPI_Errhandler_free(eh, ierr)

    pname = '?'
    call MPI_Get_processor_name(pname, slen, ierr)
    call check(slen > 0 .and. len_trim(pname) == slen, 'Get_processor_name: '//trim(pname))
    call MPI_Comm_set_name(MPI_COMM_WORLD, 'the world   ', ierr)
    call MPI_Comm_get_name(MPI_COMM_WORLD, cname, slen, ierr)
    call check(cname == 'the world' .and. slen == 9, 'Comm_set_name / get_name: '//trim(cname))

    call MPI_Info_create(info, ierr)
    call MPI_Info_set(info, 'color  ', 'dark blue  ', ierr)
    call MPI_Info_get_valuelen(info, 'color', vlen, found, ierr)
    call check(found .and. vlen == 9, 'Info_get_valuelen')
    call MPI_Info_get(info, 'color', len(val), val, found, ierr)
    call check(found .and. val == 'dark blue', 'Info_get: '//trim(val))
    call MPI_Info_get(info, 'size', len(val), val, found, ierr)
    call check(.not. found, 'Info_get of a missing key')
    call MPI_Info_free(info, ierr)
  end subroutine

  subroutine attributes()
    integer :: keyval, dup
    integer(kind=MPI_ADDRESS_KIND) :: val, extra
    logical :: found
    call MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, val, found, ierr)
    call check(found .and. val >= 32767, 'MPI_TAG_UB through Comm_get_attr')
    ! a keyval with Fortran callbacks: the copy doubles the value
    extra = 5
    ncopies = 0
    call MPI_Comm_create_keyval(copy_double, MPI_COMM_NULL_DELETE_FN, keyval, extra, ierr)
    val = 21
    call MPI_Comm_set_attr(MPI_COMM_WORLD, keyval, val, ierr)
    call MPI_Comm_dup(MPI_COMM_WORLD, dup, ierr)
    call MPI_Comm_get_attr(dup, keyval, val, found, ierr)
    call check(found .and. val == 42 .and. ncopies == 1, 'Fortran copy callback on Comm_dup')
    call MPI_Comm_free(dup, ierr)
    call MPI_Comm_delete_attr(MPI_COMM_WORLD, keyval, ierr)
    call MPI_Comm_get_attr(MPI_COMM_WORLD, keyval, val, found, ierr)
    call check(.not. found, 'Comm_delete_attr')
    call MPI_Comm_free_keyval(keyval, ierr)
  end subroutine

end program f_p2p

! the callbacks, outside the program: MPI calls them
subroutine count_errors(comm, code)
  use f_p2p_state
  integer :: comm, code
  nerrors = nerrors + 1
  last_error = code
end subroutine

subroutine copy_double(oldcomm, keyval, extra, valin, valout, flag, ierr)
  use f_p2p_state
  use mpi, only: MPI_ADDRESS_KIND, MPI_SUCCESS
  integer :: oldcomm, keyval, ierr
  integer(kind=MPI_ADDRESS_KIND) :: extra, valin, valout
  logical :: flag
  if (extra /= 5) stop 'copy callback: wrong extra state'
  ncopies = ncopies + 1
  valout = 2 * valin
  flag = .true.
  ierr = MPI_SUCCESS
end subroutine
